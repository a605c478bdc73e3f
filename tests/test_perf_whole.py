"""W1 (issue 13 item 1): the whole-run AbGen benchmark at a tiny size: its figures are there and consistent, and the
rerun is served from the cache. Timings are printed by `make bench`, never asserted."""
import hashlib, json, math, statistics
import pytest
from scibench.fakeserver import FakeServer
from scibench.perf_abgen import PERF, w1_abgen, w1_abgen_data, w1_reply
from scibench.abgen import load_abgen
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
              "rerun_wall_s", "rerun_to_cold"):
        assert r[k] > 0, k
    assert r["small_items"] == 5 and 1 <= r["peak_inflight"] <= 128
    assert (r["rerun_cached"], r["rerun_calls"]) == (100, 0)         # the rerun made no call: all from the cache


def test_chain_floor_grows_with_items_and_stages():
    from scibench.perf import chain_floor
    one = chain_floor(100, dict(generate=100), 0.2, 1.0)
    assert 0.2 < one < chain_floor(1000, dict(generate=1000), 0.2, 1.0)
    assert chain_floor(100, dict(generate=100, judge=400), 0.2, 1.0) > one + 0.2   # a second stage of 4 calls adds its slowest
    assert chain_floor(10, dict(generate=10), 0.2, 0.0) == pytest.approx(0.2)      # no spread: one latency
