"""W1 (issue 13 item 1): the whole-run AbGen benchmark at a tiny size: its figures are there and consistent, and the
rerun is served from the cache. Timings are printed by `make bench`, never asserted."""
import hashlib, json, math, statistics
import pytest
from bench.fakeserver import FakeServer
from bench.abgen import PERF, w1_abgen, w1_abgen_data, w1_reply
from scibench.benchmarks.abgen.method import load_abgen
from scibench.judge import parse_score


def test_lognormal_latency_is_deterministic_and_has_the_asked_shape():
    fs = FakeServer(latency_dist=("lognormal", 0.2, 1.0))
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(20_000)]
    ds = [fs.delay(k) for k in keys]
    assert ds == [fs.delay(k) for k in keys]                         # same request, same latency
    assert abs(statistics.median(ds) / 0.2 - 1) < 0.05
    assert abs(statistics.fmean(ds) / (0.2 * math.exp(0.5)) - 1) < 0.05
    assert abs(statistics.quantiles(ds, n=100)[98] / (0.2 * math.exp(2.326)) - 1) < 0.15
    assert FakeServer(latency=0.05).delay(keys[0]) == 0.05            # the fixed latency still works
    with pytest.raises(ValueError, match="lognormal"): FakeServer(latency_dist=("normal", 0.2, 1.0))


def test_w1_data_is_real_abgen_schema_and_replies_parse(tmp_path):
    p = w1_abgen_data(3, tmp_path)
    ex = load_abgen(path=p)
    assert [e["example_id"] for e in ex] == ["w1-00000", "w1-00001", "w1-00002"]
    assert 1500 < len(" ".join(str(v) for v in ex[0].values()).split()) < 2500   # ~1,850-word context
    judge = {"messages": [{"role": "system", "content": "criterion"}, {"role": "user", "content": "x"}]}
    v, _, fail = parse_score(w1_reply(judge))
    assert fail is None and 1 <= v <= 5
    assert w1_reply({"messages": [{"role": "user", "content": "x"}]}).startswith("Research Objective:")


def test_w1_whole_run_tiny():
    assert PERF["W1"] is w1_abgen
    r = w1_abgen(20, latency_dist=("lognormal", 0.005, 1.0))
    print(json.dumps(r))
    assert r["status"] == "complete" and r["failures"] == 0 and r["items"] == 20
    assert (r["calls_generate"], r["calls_judge"]) == (20, 80)
    assert r["prompt_tokens"] > 20 * 5 * 1500 and r["completion_tokens"] > 20 * 200
    assert r["bound_s"] == pytest.approx(100 * 0.005 * math.exp(0.5) / 128, abs=0.01)
    for k in ("wall_s", "wall_to_bound", "stage_tails_s", "chain_s", "wall_to_floor", "peak_rss_mb", "peak_rss_mb_small", "rss_ratio", "cpu_s",
              "rerun_wall_s", "rerun_to_cold", "cpu_ms_per_request", "setup_s", "import_s", "client_s", "setup_cpu_s"):
        assert r[k] > 0, k
    assert r["small_items"] == 5 and 1 <= r["peak_inflight"] <= 128
    assert (r["rerun_cached"], r["rerun_calls"]) == (100, 0)         # the rerun made no call: all from the cache
    assert (r["failures_unscripted"], r["failure_reasons"]) == (0, "none")
    assert r["floor_s"] == pytest.approx(max(r["bound_s"], r["chain_s"]), abs=0.006)
    assert r["wall_to_floor"] == pytest.approx(r["wall_s"] / r["floor_s"], rel=0.05)
    assert r["cpu_ms_per_request"] == pytest.approx(1000 * r["cpu_s"] / 100, rel=0.02)   # the run's CPU, setup apart
    # a client with no overhead on the run's own 100 draws: no slower than the run, no faster than its slowest draw
    assert 0.005 < r["ideal_s"] <= r["wall_s"]
    # (the ratio is of the unrounded figures: a tiny run's wall_s, to 2 places, is up to 2.5% off)
    assert r["wall_to_ideal"] == pytest.approx(r["wall_s"] / max(r["ideal_s"], r["chain_s"]), rel=0.05)


def test_the_fake_servers_delays_are_its_draws_in_arrival_order():
    "`GET /v1/stats?delays=1`: each chat attempt's delay, in the order the server received them (`ideal_s` reads them)."
    import urllib.request
    from scibench.llm import LLM, Request, get_model, msgs
    with FakeServer(latency_dist=("lognormal", 0.002, 1.0)) as fs:
        llm = LLM(get_model("fake", base_url=fs.base_url, max_concurrency=1), cache=False, progress=False)
        bodies = [f"question {i}" for i in range(6)]
        assert all(r["ok"] for r in llm.map([Request(msgs(b), max_tokens=5) for b in bodies]))
        with urllib.request.urlopen(fs.base_url + "/stats?delays=1", timeout=10) as r:
            st = json.loads(r.read())
        with urllib.request.urlopen(fs.base_url + "/stats", timeout=10) as r:
            assert "delays" not in json.loads(r.read())
    draws = [fs.delay(k) for k in fs.attempts]                        # the keys of the 6 requests, as they came
    assert st["attempts_timed"] == 6 and st["delays"] == pytest.approx(draws, rel=1e-9)


def test_chain_floor_grows_with_items_and_stages():
    from bench.perf import chain_floor
    one = chain_floor(100, dict(generate=100), 0.2, 1.0)
    assert 0.2 < one < chain_floor(1000, dict(generate=1000), 0.2, 1.0)
    assert chain_floor(100, dict(generate=100, judge=400), 0.2, 1.0) > one + 0.2   # a second stage of 4 calls adds its slowest
    assert chain_floor(10, dict(generate=10), 0.2, 0.0) == pytest.approx(0.2)      # no spread: one latency


def test_chain_floor_branches_and_integration():
    "`each`: a call follows its parent, below a barrier on the whole stage before; one stage: E[max] = ∫ (1 - F^k) dx."
    from bench.perf import chain_floor
    assert chain_floor(1, dict(a=1, b=3, c=3), 0.2, 1.0, 5000, each=("b", "c")) < chain_floor(1, dict(a=1, b=3, c=3), 0.2, 1.0, 5000)
    assert chain_floor(250, dict(g=250, j=1000), 0.2, 1.0, each=("j",)) == chain_floor(250, dict(g=250, j=1000), 0.2, 1.0)  # fan 1 first
    assert chain_floor(3, dict(a=3, b=1), 0.2, 0.0, each=("b",)) == pytest.approx(0.4)       # fewer calls than parents
    dx, k = 0.002, 250
    emax = sum((1 - (0.5 * (1 + math.erf(math.log(i * dx / 0.2) / math.sqrt(2)))) ** k) * dx for i in range(1, 15001))
    assert chain_floor(k, dict(g=k), 0.2, 1.0, reps=1000) == pytest.approx(emax, rel=0.03)
    assert chain_floor(1, dict(g=1), 0.2, 1.0, reps=20_000) == pytest.approx(0.2 * math.exp(0.5), rel=0.02)


def test_failure_fields_split_scripted_from_the_rest():
    from bench.perf import failure_fields
    f = failure_fields(30, {"generation: no JSON object in response": 20, "request failed: timeout": 4}, ("no JSON object",))
    assert f == dict(failures=30, failure_reasons="20 generation: no JSON object in response; 4 request failed: timeout",
                     failures_unscripted=10)                          # 6 past the listed reasons count as unexplained
    assert failure_fields(0, {})["failure_reasons"] == "none"


def test_no_perf_function_takes_more_than_8_parameters():
    "The perf modules' rule: a config dataclass (`WholeRun`) instead of long parameter lists."
    import importlib, inspect
    from bench.perf import perf_modules
    for m in ("bench.perf", *perf_modules()):
        for name, fn in inspect.getmembers(importlib.import_module(m), inspect.isfunction):
            if fn.__module__ == m:
                assert len(inspect.signature(fn).parameters) <= 8, f"{m}.{name}"


def test_bench_main_prints_load_and_survives_a_failing_figure(monkeypatch, capsys):
    import bench.perf as perf
    def boom(): raise ValueError("no model")
    monkeypatch.setattr(perf, "all_perf", lambda: {"A": lambda: dict(name="a", x=1), "B": boom, "C": lambda: dict(name="c")})
    with pytest.raises(SystemExit, match="1 figure"):
        perf.main()
    out = capsys.readouterr().out.splitlines()
    lines = [l for l in out if l.startswith("[bench] name=")]
    assert [l.split()[1] for l in lines] == ["name=a", "name=c"]        # C still ran after B failed
    assert all("load_1m_start=" in l and "load_1m=" in l and "figure_s=" in l for l in lines)
    assert any(l.startswith("[bench] B failed: ValueError: no model") for l in out)
    with pytest.raises(SystemExit, match="unknown figure"):
        perf.main(["Z"])


@pytest.mark.slow
def test_w4_failures_are_the_scripted_bad_answers():
    "W4's failures in a complete run are `w4_reply`'s deliberate bad answers (1 generation in 25, 1 citation in 40)."
    from bench.autobench import w4_autobench
    r = w4_autobench(1, latency_dist=("lognormal", 0.005, 1.0))
    assert r["status"] == "complete" and r["failures"] > 0 and r["failures_unscripted"] == 0, r["failure_reasons"]
    assert r["setup_s"] > 0 and r["cpu_ms_per_request"] > 0


def test_w3_loads_its_embedder_in_the_timed_apart_setup(monkeypatch):
    """W3 loads the embedding model (its intrinsic meta-evaluation's) in its one-time setup, as W4 does, so that the
    run's `cpu_s` and `wall_s` are the run's own; the setup is reported apart (`setup_s`)."""
    import importlib
    import bench.perf, scibench.retrieval
    from bench.rubrics import w3_rubrics

    seen = {}

    def fake_whole_run(w):
        seen["setup"] = w.setup
        return dict(wall_s=1.0, bound_s=1.0, chain_s=1.0, ideal_s=1.0)

    monkeypatch.setattr(bench.perf, "whole_run", fake_whole_run)
    w3_rubrics(1, leaf_counts=(3,), items=2)
    mod, fn = seen["setup"].split(":")
    texts = []
    monkeypatch.setattr(scibench.retrieval, "embed", lambda t, *a, **k: texts.append(list(t)))
    getattr(importlib.import_module(mod), fn)()
    assert seen["setup"] == "bench.rubrics:w3_setup" and texts == [["warm up"]]
