"""Issue 22 item 3: an LLM made with `max_concurrency=N` (as an argument, or from the registry's spec) never has more
than N chat requests at the server, on every path that sends them: `map`, `amap`, `live` + `acall`, `pipeline` and
`run_stages` (a model and its judge on one endpoint share the lower limit), with retries of every fault kind. Counted
twice: at the fake server (`peak_inflight`: chat requests it is handling, queued ones included) and in the client
(attempts on the wire at once, `_attempt`). Each case also checks
that its limit is reached, so a test server that never saw requests overlap could not pass it."""
import asyncio, dataclasses
import pytest
from scibench import llm as L
from scibench.bench import Stage
from scibench.flow import run_stages
from scibench.llm import LLM, ModelSpec, Request, get_model, msgs, pipeline

LAT = 0.05  # each chat request takes this long at the server: requests sent together overlap there


@pytest.fixture(autouse=True)
def _no_env_limit(monkeypatch):
    monkeypatch.delenv("MAX_CONCURRENCY", raising=False)


@pytest.fixture
def wire(monkeypatch):
    "The client's own count: chat attempts on the wire at once (`_attempt`), its peak in `wire.peak`."
    class Count:
        now = peak = 0
    send = L._attempt

    async def counted(*a, **kw):
        Count.now += 1
        Count.peak = max(Count.peak, Count.now)
        try:
            return await send(*a, **kw)
        finally:
            Count.now -= 1
    monkeypatch.setattr(L, "_attempt", counted)
    return Count


def _spec(fs, source: str, n: int) -> tuple:
    """(spec, max_concurrency argument) with a limit of `n`: from the argument (the spec allows 8) or from the spec —
    the registry's `local` (embedded, llama.cpp's structured form) pointed at the fake server."""
    if source == "registry":
        spec = dataclasses.replace(get_model("local"), base_url=fs.base_url, max_concurrency=n, timeout=5.0)
        return spec, None
    return _fake(fs, max_concurrency=8, max_retries=4), n


def _fake(fs, **kw) -> ModelSpec:
    return ModelSpec("fake", fs.base_url, "fake-model", **{"timeout": 5.0, "structured": "none", **kw})


def _llm(fs, source, n):
    spec, arg = _spec(fs, source, n)
    return LLM(spec, cache=False, max_concurrency=arg, progress=False)


def _reqs(tag, k=9):
    return [Request(msgs(f"{tag} {i}")) for i in range(k)]


def _by_map(fs, source, n):
    return _llm(fs, source, n).map(_reqs("map"))


def _by_amap(fs, source, n):
    llm = _llm(fs, source, n)
    async def go():
        a, b = await asyncio.gather(llm.amap(_reqs("amap a")), llm.amap(_reqs("amap b")))  # two amaps, one live
        return a + b
    return L.run_sync(go())


def _by_live(fs, source, n):
    llm = _llm(fs, source, n)
    async def go():
        async with llm.live(quiet=True):
            return list(await asyncio.gather(*(llm.acall(r) for r in _reqs("live", 12))))
    return L.run_sync(go())


def _by_pipeline(fs, source, n):
    model, judge = _llm(fs, source, n), _llm(fs, source, n)  # two clients of one endpoint: they share the limit
    async def one(i):
        a = await model.acall(Request(msgs(f"gen {i}")))
        js = await asyncio.gather(*(judge.acall(Request(msgs(f"judge {i}-{c}: {a['text']}"))) for c in range(3)))
        return [a, *js]
    return [r for rs in pipeline(range(4), one, {"model": model, "judge": judge}) for r in rs]


GEN = Stage("gen", "model", request=lambda s, _: Request(msgs(f"stage gen {s['item']}")),
            result=lambda s, a, _: s.update(gen=a))
JUDGE = Stage("judge", "judge",
              request=lambda s, _: {c: Request(msgs(f"stage judge {s['item']}-{c}: {s['gen']['text']}"))
                                    for c in range(3)},
              result=lambda s, a, _: s.update(judge=a))


def _by_stages(fs, source, n):
    llms = {"model": _llm(fs, source, n), "judge": _llm(fs, source, n)}
    states = run_stages([GEN, JUDGE], range(4), llms)
    return [r for s in states for r in (s["gen"], *s["judge"].values())]


PATHS = dict(map=_by_map, amap=_by_amap, live=_by_live, pipeline=_by_pipeline, run_stages=_by_stages)


@pytest.mark.parametrize("source", ["argument", "registry"])
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("n", [1, 3])
def test_every_path_keeps_the_limit(fake_server, wire, path, source, n):
    fs = fake_server(latency=LAT, slots=8)  # 8 slots: queues nothing at n <= 8
    res = PATHS[path](fs, source, n)
    assert res and all(r["ok"] for r in res), [r["error"] for r in res if not r["ok"]][:3]
    assert fs.peak_inflight == n and wire.peak == n, (fs.peak_inflight, wire.peak)


@pytest.mark.parametrize("faults", [("429", "500"), ("reset",), ("html", "array", "nochoices", "badjson")])
@pytest.mark.parametrize("n", [1, 3])
def test_retries_keep_the_limit(fake_server, wire, faults, n):
    "Every request fails once (then answers): its retry is sent inside its slot, never beside the others."
    fs = fake_server(latency=LAT, fault_rate=1.0, faults=faults, max_faults=1)
    llm = LLM(_fake(fs, max_concurrency=8, max_retries=2), cache=False, max_concurrency=n, progress=False)
    res = llm.map(_reqs("retry", 4))
    assert all(r["ok"] for r in res) and fs.calls == 8 and sum(llm.usage.retries.values()) == 4
    assert fs.peak_inflight == n and wire.peak == n, (fs.peak_inflight, wire.peak)


def test_amaps_that_overlap_share_one_limit(fake_server, wire):
    """Two `amap`s in one event loop share the LLM's open `live` and its limit, also after the one that opened it has
    finished while the other still waits for answers: a third `amap` started then must not get a second limit."""
    fs = fake_server(latency=LAT, slots=8)
    llm = LLM(_fake(fs, max_concurrency=1), cache=False, progress=False)

    async def go():
        a = asyncio.ensure_future(llm.amap(_reqs("first", 2)))
        b = asyncio.ensure_future(llm.amap(_reqs("second", 8)))
        await a  # the first amap ends (its live with it?) while the second still has requests waiting
        c = await llm.amap(_reqs("third", 4))
        return (await a) + (await b) + c
    res = L.run_sync(go())
    assert len(res) == 14 and all(r["ok"] for r in res)
    assert fs.peak_inflight == 1 and wire.peak == 1, (fs.peak_inflight, wire.peak)


def test_amaps_that_overlap_in_batch_mode_both_get_their_answers(fake_server):
    "The second of two overlapping batch-mode `amap`s is not cancelled when the first (which opened the live) ends."
    fs = fake_server(batch_delay=0.3)
    llm = LLM(_fake(fs, batch=True), cache=False, progress=False, batch_poll=0.1)

    async def go():
        a = asyncio.ensure_future(llm.amap(_reqs("batch a", 1)))
        await asyncio.sleep(0.5)  # a's batch is submitted; b's request joins the same live and its own batch
        b = asyncio.ensure_future(llm.amap(_reqs("batch b", 1)))
        return await a, await b
    a, b = L.run_sync(go())
    assert a[0]["ok"] and b[0]["ok"] and fs.batches_created == 2


def test_a_timed_out_attempt_is_retried_within_the_limit(fake_server, wire):
    """A client timeout (the server hangs): the retry takes the slot the timed-out attempt held. The server may still be
    working on what the client gave up on (the fake server's hung handler is; so is llama.cpp's server on a long
    answer), which is why the embedded model's timeout (900 s) covers its queue."""
    fs = fake_server(fault_rate=1.0, faults=("timeout",), max_faults=1, hang=1.5)
    llm = LLM(_fake(fs, max_retries=2, timeout=0.3), cache=False, max_concurrency=1, progress=False)
    res = llm.map(_reqs("hang", 2))
    assert all(r["ok"] for r in res) and llm.usage.retries == {"timeout": 2}
    assert wire.peak == 1


def test_the_structured_probe_and_readiness_checks_send_before_the_run(fake_server, wire):
    """`structured = "auto"` is resolved when the LLM is made (a `GET /props`, outside the run): during `map` the
    server only ever sees the run's requests, one at a time."""
    fs = fake_server(latency=LAT)  # answers no /props: the OpenAI-compatible json_schema
    spec = ModelSpec("fake", fs.base_url, "fake-model", max_concurrency=4, timeout=5.0, structured="auto")
    L._MODES.pop(L.batch_scope(spec), None)
    llm = LLM(spec, cache=False, max_concurrency=1, progress=False)
    assert llm.spec.structured == "json_schema" and fs.calls == 0  # the detection is answered outside the counts
    probes = [h for h in fs.headers_seen if "x-scibench-probe" in h]
    assert len(probes) == 1
    seen = len(fs.headers_seen)
    res = llm.map(_reqs("auto", 6))
    assert all(r["ok"] for r in res) and fs.peak_inflight == 1 and wire.peak == 1
    assert len(fs.headers_seen) - seen == 6, "no GET or probe during the run"
