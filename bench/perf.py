"""`make bench`: performance figures, printed (never asserted in tests). Each figure is a ratio
against a baseline measured in the same run, so it means the same on any machine."""


from __future__ import annotations
import json, math, os, statistics, subprocess, sys, tempfile, time
import psutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from scibench.llm import LLM, Cache, ModelSpec, Request, msgs, get_model
from scibench.server import embedded_speed_path, serving, smollm2_path
from bench import peak_rss_mb
from bench.fakeserver import FakeServer

__all__ = ['P1L_LATENCY', 'P5_PROMPTS', 'P6_SIZES', 'P6_GEN', 'W1_LATENCY', 'W1_CONCURRENCY', 'PERF', 'perf_modules',
           'fake_server_process', 'perfect_client_s', 'p1_throughput', 'p1_lognormal', 'p2_cache', 'p5_embedded',
           'p6_embedded_context', 'chain_floor', 'WholeRun', 'failure_fields', 'whole_run', 'all_perf', 'main']

def fake_server_process(latency: float = 0.1, **kw):
    """A FakeServer in a child process (so it does not share the client's GIL); returns (process, base_url).
    `kw`: more `FakeServer` options as literals (`latency_dist=(...)`, `reply="module:function"`)."""
    pf = Path(tempfile.mkdtemp()) / "port"
    code = f"from bench.fakeserver import serve_forever; serve_forever({str(pf)!r}, latency={latency!r}, **{kw!r})"
    p = subprocess.Popen([sys.executable, "-c", code])
    for _ in range(400):
        if pf.exists() and pf.read_text():
            break
        time.sleep(0.05)
    return p, f"http://127.0.0.1:{pf.read_text()}/v1"


def _proc_cpu_s(pid: int) -> float | None:
    "CPU seconds (user + system) of process `pid` so far (None where there is none)."
    try:
        return sum(psutil.Process(pid).cpu_times()[:2])
    except psutil.Error:
        return None


def perfect_client_s(latencies, concurrency: int) -> float:
    """The wall time of a client with no overhead: each request sent, in order, the moment one of `concurrency` slots
    is free, answered after its latency. With a fixed latency L it is ceil(n / concurrency) x L."""
    import heapq

    free, end = [0.0] * max(1, min(concurrency, len(latencies))), 0.0
    for lat in latencies:
        t = heapq.heappop(free) + lat
        heapq.heappush(free, t)
        end = max(end, t)
    return end


def _p1_run(n: int, concurrency: int, latency: float, **server) -> tuple:
    """`n` distinct chat requests at `concurrency` to a fake server in its own process (`server`: its options) →
    (results, wall s, client CPU s, server CPU s or None, the requests' bodies)."""
    proc, url = fake_server_process(latency, **server)
    try:
        spec = ModelSpec("fake", url, "fake", max_concurrency=concurrency, max_retries=0, timeout=30)
        llm = LLM(spec, cache=False, max_concurrency=concurrency, progress=False)
        llm.map([Request(msgs(f"warm {i}")) for i in range(concurrency)])
        reqs = [Request(msgs(f"p1 request {i}")) for i in range(n)]
        s0, c0, t0 = _proc_cpu_s(proc.pid), time.process_time(), time.perf_counter()
        res = llm.map(reqs)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0  # the server is another process: the client's
        s1 = _proc_cpu_s(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    return res, wall, cpu, None if s0 is None or s1 is None else s1 - s0, [llm.body(r) for r in reqs]


def _p1_fields(n: int, res, cpu: float, server_cpu) -> dict:
    return dict(
        failures=sum(not r["ok"] for r in res),
        cpu_ms_per_request=round(1000 * cpu / n, 3),
        server_cpu_ms_per_request=None if server_cpu is None else round(1000 * server_cpu / n, 3),
        event_loop="asyncio",  # run_sync's
    )


def p1_throughput(n: int = 2000, concurrency: int = 64, latency: float = 0.1) -> dict:
    """P1: wall time against the ideal n / concurrency x latency. `ceiling` is the best ratio any client can read:
    with a fixed latency the last of ceil(n / concurrency) rounds is partly empty (2,000 = 31.25 x 64: 32 rounds,
    0.977)."""
    res, wall, cpu, server_cpu, _ = _p1_run(n, concurrency, latency)
    ideal = n / concurrency * latency
    f = _p1_fields(n, res, cpu, server_cpu)
    return dict(
        name="P1 client throughput",
        requests=n,
        concurrency=concurrency,
        failures=f.pop("failures"),
        wall_s=round(wall, 3),
        ideal_s=round(ideal, 3),
        ratio_to_ideal=round(ideal / wall, 3),
        target=">= 0.9",
        cpu_ms_per_request=f.pop("cpu_ms_per_request"),
        event_loop=f.pop("event_loop"),
        ceiling=round(ideal / perfect_client_s([latency] * n, concurrency), 3),
        **f,
    )


P1L_LATENCY = ("lognormal", 0.1, 0.5)  # median 100 ms, sigma 0.5: mean 113 ms


def p1_lognormal(n: int = 2000, concurrency: int = 64, latency_dist: tuple = P1L_LATENCY) -> dict:
    """P1L, a variant of P1 (not P1): each request's latency drawn from a lognormal (the fake server's draw, fixed by
    the request), so the requests do not move in waves. Its ideal is `perfect_client_s` of the same draws (the wall
    time of a client with no overhead), not n / concurrency x mean, which ignores the last requests' tail."""
    fs = FakeServer(latency_dist=latency_dist)  # not started: its draw for each request
    res, wall, cpu, server_cpu, bodies = _p1_run(n, concurrency, 0.0, latency_dist=tuple(latency_dist))
    lats = [fs.delay(fs.key(b)) for b in bodies]
    ideal = perfect_client_s(lats, concurrency)
    _, median, sigma = latency_dist
    bound = n / concurrency * median * math.exp(sigma**2 / 2)
    return dict(
        name="P1L client throughput, lognormal latency (variant of P1)",
        requests=n,
        concurrency=concurrency,
        latency=f"lognormal median {median}s sigma {sigma}",
        wall_s=round(wall, 3),
        ideal_s=round(ideal, 3),
        ratio_to_ideal=round(ideal / wall, 3),
        target=">= 0.9 (informative)",
        bound_s=round(bound, 3),
        ratio_to_bound=round(bound / wall, 3),
        **_p1_fields(n, res, cpu, server_cpu),
    )


def p2_cache(n: int = 10_000) -> dict:
    with FakeServer() as fs, tempfile.TemporaryDirectory() as d:
        spec = ModelSpec("fake", fs.base_url, "fake", max_concurrency=64)
        reqs = [Request(msgs(f"p2 request {i}")) for i in range(n)]
        LLM(spec, cache=Cache(Path(d) / "c.sqlite"), progress=False).map(reqs)
        calls = fs.calls
        llm = LLM(spec, cache=Cache(Path(d) / "c.sqlite"), progress=False)
        c0, t0 = time.process_time(), time.perf_counter()
        res = llm.map(reqs)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0  # no call: the server is idle
        assert fs.calls == calls and all(r["cached"] for r in res)
    return dict(
        name="P2 cache replay",
        requests=n,
        wall_s=round(wall, 3),
        requests_per_s=round(n / wall),
        target=">= 5000/s",
        cpu_ms_per_request=round(1000 * cpu / n, 3),
    )


P5_PROMPTS = [
    "Explain what an ablation study is.",
    "List three ways to evaluate a summarization model.",
    "Describe how to test whether a data filter improves a model.",
]


def p5_embedded(max_tokens: int = 128, rounds: int = 3) -> dict:
    """Generation tokens/s of the embedded server through `LLM.map` (one request in flight) against llama.cpp in
    process with the server's settings (context, flash attention, threads) and the sampling the server applies to
    our requests (its `repeat_penalty` default 1.1, where llama-cpp-python's own is 1.0: 17% fewer tokens/s on these
    prompts, `raw_default_tokens_per_s`), on the same prompts. Each side answers one short request first (untimed:
    the first decode allocates its buffers; a cold server read 67 against 93 warm); then `rounds` rounds, raw and
    server interleaved so that the machine's drift falls on both; the figures are the means of the rounds."""
    from llama_cpp import Llama
    from llama_cpp.server import types as server_types

    spec = get_model("local")
    raw = Llama(str(smollm2_path()), n_ctx=spec.context or 8192, n_threads=os.cpu_count() or 2, flash_attn=True,
                verbose=False)
    penalty = server_types.repeat_penalty_field.default

    def raw_round(**kw) -> float:
        t0, toks = time.perf_counter(), 0
        for p in P5_PROMPTS:
            r = raw.create_chat_completion(messages=msgs(p), max_tokens=max_tokens, temperature=0, seed=0, **kw)
            toks += r["usage"]["completion_tokens"]
        return toks / (time.perf_counter() - t0)

    raw.create_chat_completion(messages=msgs("warm up"), max_tokens=8, temperature=0, seed=0)
    raws, defaults, srvs, cpu, fails = [], [], [], 0.0, 0
    with serving("local"):
        llm = LLM(spec, cache=False, max_concurrency=1, progress=False)
        llm.map([Request(msgs("warm up"), max_tokens=8, temperature=0)])
        for _ in range(rounds):
            raws.append(raw_round(repeat_penalty=penalty))
            c0, t0 = time.process_time(), time.perf_counter()
            res = llm.map([Request(msgs(p), max_tokens=max_tokens, temperature=0) for p in P5_PROMPTS])
            srvs.append(sum(r["usage"]["completion_tokens"] for r in res if r["ok"]) / (time.perf_counter() - t0))
            cpu += time.process_time() - c0  # the client's: the server is another process
            fails += sum(not r["ok"] for r in res)
            defaults.append(raw_round())
    raw_tps, srv_tps = statistics.mean(raws), statistics.mean(srvs)
    return dict(
        name="P5 embedded server",
        raw_tokens_per_s=round(raw_tps, 1),
        server_tokens_per_s=round(srv_tps, 1),
        ratio=round(srv_tps / raw_tps, 3),
        rounds=rounds,
        round_ratios=",".join(f"{s / r:.2f}" for s, r in zip(srvs, raws)),
        failures=fails,
        target=">= 0.8",
        raw_default_tokens_per_s=round(statistics.mean(defaults), 1),
        repeat_penalty=penalty,
        cpu_ms_per_request=round(1000 * cpu / (rounds * len(P5_PROMPTS)), 3),
    )

P6_SIZES = (1000, 4000, 7000)
P6_GEN = 32


def _p6_prompt(n_words: int, tag: str) -> list:
    words = [_W1_VOCAB[(7 * j + len(tag)) % len(_W1_VOCAB)] for j in range(n_words)]
    return msgs(f"[{tag}] Summarise this repository file.\n" + " ".join(words))


def _p6_measure(call, count, sizes) -> dict:
    """For each size: (prompt tokens, prompt tokens/s from a 1-token answer, generation tokens/s of the same prompt
    again)."""
    out = {}
    for n in sizes:
        m = _p6_prompt(int(n * 0.97), f"p6-{n}")  # ~1 token per word of this vocabulary
        t0 = time.perf_counter()
        pt = call(m, 1)
        pp = time.perf_counter() - t0
        t0 = time.perf_counter()
        _, gt = count(m, P6_GEN)
        g = time.perf_counter() - t0
        out[n] = dict(
            prompt_tokens=pt, prompt_tokens_per_s=round(pt / pp, 1), tokens_per_s=round(gt / g, 1) if gt else None
        )
    return out


def p6_embedded_context(sizes=P6_SIZES) -> dict:
    """Prompt processing and generation of the embedded server against llama.cpp in process, at 1K / 4K / 7K-token
    prompts."""
    from llama_cpp import Llama

    spec = get_model("local")
    raw = Llama(
        str(smollm2_path()),
        n_ctx=spec.context or 8192,
        n_threads=os.cpu_count() or 2,
        n_batch=512,
        flash_attn=True,
        verbose=False,
    )

    def rcount(m, k):
        u = raw.create_chat_completion(messages=m, max_tokens=k, temperature=0, seed=0)["usage"]
        return u["prompt_tokens"], u["completion_tokens"]

    r = _p6_measure(lambda m, k: rcount(m, k)[0], rcount, sizes)
    raw.close()
    with serving("local"):
        llm = LLM(spec, cache=False, max_concurrency=1, progress=False)

        def scount(m, k):
            x = llm.map([Request(m, max_tokens=k, temperature=0)])[0]
            if not x["ok"]:
                raise RuntimeError(f"P6: the embedded server failed: {x['error']}")
            return x["usage"]["prompt_tokens"], x["usage"]["completion_tokens"]

        s = _p6_measure(lambda m, k: scount(m, k)[0], scount, sizes)
    big = max(sizes)
    res = dict(name="P6 embedded server at real prompt sizes", load_1m=round(os.getloadavg()[0], 2))
    for n in sizes:
        res[f"{n // 1000}K_prompt_tokens_per_s"] = f"{s[n]['prompt_tokens_per_s']} vs raw {r[n]['prompt_tokens_per_s']}"
        res[f"{n // 1000}K_tokens_per_s"] = f"{s[n]['tokens_per_s']} vs raw {r[n]['tokens_per_s']}"
    res["pp_ratio_7K"] = round(s[big]["prompt_tokens_per_s"] / r[big]["prompt_tokens_per_s"], 3)
    gen = min(
        (x["tokens_per_s"] for x in s.values() if x["tokens_per_s"]), default=None
    )  # None: the model ended at once
    leaf = 6400 / s[big]["prompt_tokens_per_s"] + 40 / (gen or 1)
    res.update(grading_leaf_6400_tokens_s=round(leaf, 1), target="pp ratio >= 0.8; a 6,400-token leaf in < 60 s")
    embedded_speed_path().parent.mkdir(parents=True, exist_ok=True)
    embedded_speed_path().write_text(
        json.dumps(
            dict(
                server_prompt_tokens_per_s=s[big]["prompt_tokens_per_s"],
                server_tokens_per_s=min((x["tokens_per_s"] for x in s.values() if x["tokens_per_s"]), default=None),
                sizes=s,
                raw=r,
                measured=time.strftime("%Y-%m-%d"),
            )
        )
    )
    return res

W1_LATENCY = ("lognormal", 0.2, 1.0)  # median 200 ms, sigma 1.0: mean 0.33 s, p99 2.05 s
W1_CONCURRENCY = 128
_W1_VOCAB = (
    "model data training ablation module results baseline accuracy method dataset evaluation layer loss "
    "attention encoder retrieval signal noise sample metric variant control experiment improve compare "
    "performance robust transfer task benchmark representation objective"
).split()  # W1's and P6's words


def _cpu_s() -> float:
    "CPU seconds (user + system) of this process so far."
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _warm_client(url: str, concurrency: int, setup: str | None = None) -> None:
    """The process's one-time client setup, done before a whole run's clock starts: the client's lazy imports and
    classes, its structured-output detection (cached per endpoint and process) and one request to the fake server;
    then `setup` ("module:function", called with no argument) for a benchmark's own one-time setup."""
    import importlib
    import scibench.view  # noqa: F401 (the run's report, imported at its end)
    from scibench.llm import resolve_structured

    spec = get_model("fake", base_url=url, max_concurrency=concurrency, timeout=120)
    resolve_structured({"fake": spec})
    LLM(spec, cache=False, progress=False).map([Request(msgs("warm up the client"), max_tokens=1)])
    if setup:
        mod, fn = setup.split(":")
        getattr(importlib.import_module(mod), fn)()


def _whole_child(bench: str, params: dict, url: str, concurrency: int, setup: str | None = None) -> dict:
    """In a fresh process: one run of `bench` against `url` (every role named `fake`). One-time setup is timed apart:
    the benchmark's modules imported (`import_s`), the client warmed up (`client_s`: `_warm_client`), `setup_cpu_s`
    (this process's CPU before the run, its start included); `wall_s`, `cpu_s` and `compute_s` (embedding seconds,
    `retrieval.compute_seconds`) are the run's own (`execute`)."""
    t0 = time.perf_counter()
    from scibench.run import execute
    from scibench.bench import get_benchmark
    from scibench.retrieval import compute_seconds

    get_benchmark(bench)
    ti = time.perf_counter()
    _warm_client(url, concurrency, setup)
    timed = _server_stats(url)["attempts_timed"]  # the fake server's draws before the run (the warm-up's)
    t1, c1, k1 = time.perf_counter(), _cpu_s(), compute_seconds()
    ep = {"fake": dict(base_url=url, max_concurrency=concurrency, timeout=120, structured="none")}  # text replies
    meta = execute(bench, params, ep, notebook=False, progress=False)
    return dict(
        wall_s=time.perf_counter() - t1,
        cpu_s=_cpu_s() - c1,
        compute_s=compute_seconds() - k1,
        setup_s=t1 - t0,
        import_s=ti - t0,
        client_s=t1 - ti,
        setup_cpu_s=c1,
        peak_rss_mb=peak_rss_mb(),
        status=meta["status"],
        status_reason=meta.get("status_reason"),
        n=meta["n"],
        failures=meta["failures"],
        failures_by_reason=meta.get("failures_by_reason") or {},
        usage={k: v for k, v in meta["usage"].items()},
        delays_from=timed,
    )


def _whole_run(w: "WholeRun", url: str, data: Path, cache: Path, results: Path) -> dict:
    "`_whole_child` in a fresh interpreter with its data, cache and results folders; its figures."
    env = dict(
        os.environ, **(w.env or {}), SCIBENCH_DATA=str(data), SCIBENCH_CACHE=str(cache), SCIBENCH_RESULTS=str(results)
    )
    code = (
        f"import json; from bench.perf import _whole_child; print('WRESULT ' + json.dumps(_whole_child("
        f"{w.bench!r}, {w.params!r}, {url!r}, {w.concurrency!r}, {w.setup!r})))"
    )
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    line = next((l for l in p.stdout.splitlines() if l.startswith("WRESULT ")), None)
    if p.returncode or line is None:
        raise RuntimeError(f"{w.bench} run failed (rc {p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(line[len("WRESULT ") :])


def _server_stats(url: str, delays: bool = False) -> dict:
    import urllib.request

    with urllib.request.urlopen(url + "/stats" + ("?delays=1" if delays else ""), timeout=10) as r:
        return json.loads(r.read())


def _spread(calls: int, owners: int, rng):
    "The owner of each of `calls` calls among `owners`: calls // owners each, the rest to owners drawn at random."
    import numpy as np

    extra = rng.choice(owners, calls % owners, replace=False) if calls % owners else np.zeros(0, int)
    return np.concatenate([np.repeat(np.arange(owners), calls // owners), extra])


def chain_floor(
    items: int, stages: dict, median: float, sigma: float, reps: int | None = None, seed: int = 0, each=()
) -> float:
    """The dependency floor: the expected finish of the slowest item with unlimited concurrency (mean over `reps`
    draws; default 200, fewer for runs of over 10,000 calls). `stages` ({stage: calls} over all items) run in order,
    each call taking a lognormal latency median·e^{σZ}; a stage's calls are spread evenly over the items. A call
    starts when its item's earlier stages are done (a barrier), or, for a stage in `each`, when its parent is (one
    call of the stage before; calls spread evenly over the parents). No run, however streamed, ends sooner; with few
    items it is above `bound`."""
    import numpy as np

    rng = np.random.default_rng(seed)
    st = [(k, int(c)) for k, c in stages.items() if c]
    reps = reps or max(20, min(200, 2_000_000 // max(1, sum(c for _, c in st))))  # the max of many items varies little
    ends = []
    for _ in range(reps):
        done, prev = np.zeros(max(1, items)), None  # per item: when its stages so far are done
        for k, c in st:
            lat = median * np.exp(sigma * rng.standard_normal(c))
            if k in each and prev is not None:
                parent = _spread(c, len(prev[0]), rng)
                end, item = prev[0][parent] + lat, prev[1][parent]
            else:
                item = _spread(c, len(done), rng)
                end = done[item] + lat
            np.maximum.at(done, item, end)
            prev = end, item
        ends.append(done.max())
    return float(np.mean(ends))


@dataclass
class WholeRun:
    """One whole-run figure: `bench` run with `params` (every role named `fake`) on synthetic data (`write_data(n,
    folder)` writes `n` items into a data folder) against the fake server in another process (`reply`:
    "module:function" giving its answers; `latency_dist`; `concurrency`, the endpoint's `max_concurrency`). `small`:
    the items of the flatness run. `stages(usage)` → the run's dependent stages {stage: calls} (default: fresh calls
    per role), for the bound and the chain floor; `each`: the stages whose calls each follow one call of the stage
    before (else a stage waits for its item's whole stage before: `chain_floor`). `setup`: "module:function", the
    benchmark's one-time setup in the run's process, timed apart; `env`: more variables for that process.
    `scripted`: what the failure reasons of the fake model's deliberate bad answers contain (`failures_unscripted`
    counts the others: a failure of the harness or the benchmark, target 0). `chains` {name: seconds}: the benchmark's
    own dependency floors (W3's agents' chain), taken as `chain_s` is."""

    name: str
    bench: str
    params: dict
    write_data: Callable
    n: int
    small: int
    reply: str
    stages: Callable | None = None
    each: tuple = ()
    concurrency: int = W1_CONCURRENCY
    latency_dist: tuple = W1_LATENCY
    setup: str | None = None
    env: dict | None = None
    scripted: tuple = ()
    chains: dict = field(default_factory=dict)


def failure_fields(failures: int, by_reason: dict, scripted=(), k: int = 4) -> dict:
    """A run's failures for a `make bench` line: the count, the `k` commonest reasons (shortened) and how many are not
    the fake model's deliberate bad answers (a reason containing none of `scripted`; reasons past the top ones count
    there too)."""
    known = sum(c for r, c in by_reason.items() if any(x in r for x in scripted))
    return dict(
        failures=failures,
        failure_reasons="; ".join(f"{c} {r[:70]}" for r, c in list(by_reason.items())[:k]) or "none",
        failures_unscripted=failures - known,
    )


def _cold_warm_small(w: WholeRun) -> tuple:
    "The cold run, the rerun from its cache and the cold run at `small` items, each in a fresh process; peak in flight."
    proc, url = fake_server_process(0.0, latency_dist=tuple(w.latency_dist), reply=w.reply)
    try:
        with tempfile.TemporaryDirectory(prefix=f"scibench-{w.bench}-") as d:
            d = Path(d)
            w.write_data(w.n, d / "data")
            w.write_data(w.small, d / "data-small")
            cold = _whole_run(w, url, d / "data", d / "cache", d / "results")
            st = _server_stats(url, delays=True)
            peak, cold["delays"] = st["peak_inflight"], st["delays"][cold["delays_from"] :]
            warm = _whole_run(w, url, d / "data", d / "cache", d / "results")
            low = _whole_run(w, url, d / "data-small", d / "cache-small", d / "results")
    finally:
        proc.kill()
        proc.wait()
    return cold, warm, low, peak


def whole_run(w: WholeRun) -> dict:
    """The figures of a `WholeRun`: a cold run at `n`, a rerun from its cache and a cold run at `small` for flatness.
    The bound is the stages' calls x the mean latency / `concurrency`; the floor is the larger of the bound and the
    chain (`chain_floor`); the run is judged on wall / floor (target <= 1.3). Setup (imports, the client) apart.
    `compute_s`, the run's serial compute (embeddings, `retrieval.compute_seconds`), is a floor too where it is larger:
    `wall_to_compute_floor` = wall / max(bound, chain, compute), beside, not instead of, `wall_to_floor`. `ideal_s`: a
    client with no overhead on the run's own sends and draws (`perfect_client_s`); `wall_to_ideal` = wall / max(ideal,
    chain, compute). A benchmark's own chains (`WholeRun.chains`) count as `chain`."""
    cold, warm, low, peak = _cold_warm_small(w)
    _, median, sigma = w.latency_dist
    mean = median * math.exp(sigma**2 / 2)
    u = cold["usage"]
    st = w.stages(u) if w.stages else {k: v["calls"] for k, v in u.items() if k != "total"}
    bound = sum(st.values()) * mean / w.concurrency
    chain = chain_floor(w.n, st, median, sigma, each=w.each)
    ideal = perfect_client_s(cold["delays"], w.concurrency)
    r = dict(
        name=w.name,
        items=w.n,
        status=cold["status"],
        **failure_fields(cold["failures"], cold["failures_by_reason"], w.scripted),
        **{f"calls_{k}": v for k, v in st.items()},
        prompt_tokens=u["total"]["prompt_tokens"],
        completion_tokens=u["total"]["completion_tokens"],
        latency=f"lognormal median {median}s sigma {sigma} (mean {mean:.3f}s)",
        concurrency=w.concurrency,
        wall_s=round(cold["wall_s"], 2),
        bound_s=round(bound, 2),
        chain_s=round(chain, 3),
        compute_s=round(cold.get("compute_s", 0.0), 2),  # serial compute inside the run (embeddings), reported apart
        ideal_s=round(ideal, 3),  # no overhead, the same sends and draws, dependencies not waited on
    )
    floors = _against_floors(w, r, cold["wall_s"], bound, chain, ideal)
    return dict(r, **floors, **_costs(w, st, bound, cold, warm, low, peak))


def _against_floors(w: WholeRun, r: dict, wall: float, bound: float, chain: float, ideal: float) -> dict:
    "The line's floors and its wall against each (`whole_run`): the benchmark's own chains and compute included."
    more = {k: round(float(v), 3) for k, v in w.chains.items()}
    chain = max([chain, *more.values()])
    compute = r["compute_s"]
    return dict(
        **more,
        floor_s=round(max(bound, chain), 3),
        wall_to_floor=round(wall / max(bound, chain), 3),
        target="wall_to_floor <= 1.3",
        wall_to_compute_floor=round(wall / max(bound, chain, compute), 3),
        wall_to_ideal=round(wall / max(ideal, chain, compute), 3),
        wall_to_bound=round(wall / bound, 3),
    )


def _costs(w: WholeRun, st: dict, bound: float, cold: dict, warm: dict, low: dict, peak: int) -> dict:
    "The rest of a `whole_run` line: stage tails, peak in flight, CPU, setup, memory (flatness) and the rerun."
    _, median, sigma = w.latency_dist
    calls = max(1, cold["usage"]["total"]["calls"])
    tail = sum(median * math.exp(sigma * statistics.NormalDist().inv_cdf(c / (c + 1))) for c in st.values() if c)
    return dict(
        stage_tails_s=round(tail, 2),
        peak_inflight=peak,
        wall_to_bound_at_peak=round(cold["wall_s"] / (bound * w.concurrency / max(1, peak)), 3),
        cpu_s=round(cold["cpu_s"], 3),  # 3 places: a tiny run's 0.1 s, rounded to 2, is 5% off its per-request figure
        cpu_ms_per_request=round(1000 * cold["cpu_s"] / calls, 3),
        cpu_to_wall=round(cold["cpu_s"] / cold["wall_s"], 3),
        setup_s=round(cold["setup_s"], 2),
        import_s=round(cold["import_s"], 2),
        client_s=round(cold["client_s"], 2),
        setup_cpu_s=round(cold["setup_cpu_s"], 2),
        peak_rss_mb=round(cold["peak_rss_mb"]),
        peak_rss_mb_small=round(low["peak_rss_mb"]),
        small_items=w.small,
        rss_ratio=round(cold["peak_rss_mb"] / low["peak_rss_mb"], 3),
        target_rss="<= 2048 MB, flat",
        rerun_wall_s=round(warm["wall_s"], 3),
        rerun_cached=warm["usage"]["total"]["cached"],
        rerun_calls=warm["usage"]["total"]["calls"],
        rerun_to_cold=round(warm["wall_s"] / cold["wall_s"], 4),
        target_rerun="<= 0.05",
    )

PERF = {"P1": p1_throughput, "P1L": p1_lognormal, "P2": p2_cache, "P5": p5_embedded, "P6": p6_embedded_context}
# each benchmark's figures: every other module of this folder with a `PERF` dict (found, not listed)
def perf_modules() -> list:
    "The modules of `bench/` that declare figures (`PERF`), by name."
    skip = {"__init__", "__main__", "perf", "fakeserver"}
    return sorted(f"bench.{p.stem}" for p in Path(__file__).parent.glob("*.py") if p.stem not in skip)


def all_perf() -> dict:
    "P1, P2, P5, P6 plus every benchmark's whole-run and scale figures (the `PERF` of each module in `bench/`)."
    import importlib

    out = dict(PERF)
    for m in perf_modules():
        out.update(getattr(importlib.import_module(m), "PERF", {}))
    return dict(sorted(out.items()))


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def main(names=None):
    """Run the named figures (default all) and print each as it finishes, with the 1-minute load average before and
    after it (a figure read on a busy machine says so) and its seconds; a figure that raises is reported and the
    others still run (exit status 1 at the end)."""
    figs, failed = all_perf(), []
    unknown = sorted(set(names or ()) - set(figs))
    if unknown:
        raise SystemExit(f"make bench: unknown figure(s) {', '.join(unknown)}; figures: {', '.join(figs)}")
    for k, fn in figs.items():
        if names and k not in names:
            continue
        print(f"[bench] {k} ...", flush=True)
        load0, t0 = _load(), time.perf_counter()
        try:
            r = fn()
        except Exception as e:
            failed.append(k)
            print(f"[bench] {k} failed: {type(e).__name__}: {str(e)[-500:]}  load_1m_start={load0}", flush=True)
            continue
        r.update(load_1m_start=load0, load_1m=_load(), figure_s=round(time.perf_counter() - t0, 1))
        print("[bench] " + "  ".join(f"{a}={b}" for a, b in r.items()), flush=True)
    if failed:
        raise SystemExit(f"make bench: {len(failed)} figure(s) failed: {', '.join(failed)}")
