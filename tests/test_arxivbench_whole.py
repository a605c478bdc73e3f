"""ArxivBench at paper scale (issue 13): each prompt flows query → lookup → relevance → title match without waiting for
other prompts' calls (item 2), with the requests `judge_many` sent (same cache keys) and the same records; W2, the
whole-run benchmark, at a tiny size (item 1). Timings are printed by `make bench`, never asserted."""
from scibench.judge import choice_schema
import json
import math
import threading
import time

import pytest

from scibench.benchmarks.arxivbench import method as ab

from scibench.benchmarks.arxivbench import index as ai

from bench import arxivbench as pab
from scibench.core import project_root, read_json, read_jsonl
from scibench.judge import judge_many
from scibench.llm import LLM, Request, get_model, msgs


def test_judge_requests_are_judge_many_s():
    "Each judge call is the request judge_many builds (so caches of earlier runs still answer), parsed as judge_many parses it."
    class Spy:
        spec = get_model("spy", base_url="http://127.0.0.1:9/v1")
        def __init__(self, text): self.asked, self.text = [], text
        def map(self, reqs, desc=None): self.asked += reqs; return [dict(ok=True, text=self.text, finish_reason="length") for _ in reqs]
    for choices, text in ((ab.RELEVANCE, '{"rationale": "r", "answer": "no"}'), (ab.MATCH, "I cannot say")):
        spy = Spy(text)
        [old] = judge_many(spy, ["a prompt"], choices=choices, max_tokens=123)
        assert spy.asked == [ab.judge_request("a prompt", choices, max_tokens=123)]
        assert spy.asked == [Request(msgs("a prompt"), max_tokens=123, temperature=0.0, schema=choice_schema(choices))]   # as before: caches hit
        assert ab.judge_result(dict(ok=True, text=text, finish_reason="length"), choices) == old
    assert ab.query_request("p", 0.5, 77) == Request(msgs(ab.query_prompt("p")), max_tokens=77, temperature=0.5, stage="query")


def _kind(u: str) -> str:
    return "relevance" if u.startswith("A researcher asked") else "match" if u.startswith("An AI assistant cited") else "query"


def test_run_judges_each_prompt_as_soon_as_its_answer_arrives(fake_server, run_bench, tmp_path, monkeypatch):
    """Query latencies spread widely (lognormal, sigma 1.5): a fast prompt's title-match answer arrives before the slowest
    query's answer (stage by stage, every judge call waited for the last query). Records and scores are those of the
    stage-by-stage functions (`query`, then `verify_and_judge`), which find every answer in the run's cache."""
    pab.w2_data(40, tmp_path/"data", records=200)
    monkeypatch.setenv("SCIBENCH_DATA", str(tmp_path/"data"))
    log, lock = [], threading.Lock()
    def reply(body):
        u = body["messages"][-1]["content"]
        with lock: log.append((time.monotonic(), _kind(u)))
        return pab.w2_reply(body)
    fs = fake_server(reply=reply, latency_dist=("lognormal", 0.05, 1.5))
    eps = {"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}}
    meta, d = run_bench("arxivbench", dict(model="fake", judge="fj", split="test", protocol="paper"), endpoints=eps)
    assert meta["status"] == "complete" and meta["n"] == 40 and meta["failures"] == 0
    last_query = max(t for t, k in log if k == "query")
    assert sum(k == "match" for t, k in log if t < last_query) >= 5, "title-match calls waited for the slowest query"
    assert sum(k == "relevance" for t, k in log if t < last_query) >= 10
    recs = read_jsonl(d/"records.jsonl")
    assert [r["id"] for r in recs] == [f"w2-{i:05d}" for i in range(40)]               # streamed in input order
    # the stage-by-stage path: the same requests (all from the run's cache: no call) and the same records and scores
    calls = fs.calls
    prompts = ab.load_prompts("test")
    items = ab.query(LLM(get_model("fake", base_url=fs.base_url), progress=False), prompts)
    with ai.open_index(ab.index_for("test")) as ix:
        ab.verify_and_judge(LLM(get_model("fj", base_url=fs.base_url), progress=False), items, ix)
    assert fs.calls == calls
    assert [ab.record(it) for it in items] == recs
    s = read_json(d/"scores.json")["subjects"]
    assert json.loads(json.dumps(ab.score_records(items), allow_nan=True).replace("NaN", "null")) == s
    a = s["all"]
    assert a["prompts"] == 40 and a["taxonomy"]["correct"] > 0 and a["malformed_ids"] > 0 and a["statuses"]["ok"] > 30
    assert a["yes"] + a["no"] + a["passed"] + a["judge_failures"] == a["papers_listed"]


@pytest.mark.slow   # a whole ArxivBench perf run with its rerun: about a minute on 2 busy cores (CI runs it)
def test_w2_registered_and_whole_run_tiny():
    assert pab.PERF["W2"] is pab.w2_arxivbench
    r = pab.w2_arxivbench(13, latency_dist=("lognormal", 0.005, 1.0))
    print(json.dumps(r))
    assert r["status"] == "complete" and r["failures"] == 0 and r["items"] == 13 and r["small_items"] == 3
    plan = [k for i in range(13) for k, _, _ in pab._w2_plan(i)]
    assert r["calls_query"] == 13 and r["calls_judge_relevance"] == sum(k in ("real", "unrelated") for k in plan)
    assert 0 < r["calls_judge_match"] <= r["calls_judge_relevance"]
    calls = r["calls_query"] + r["calls_judge_relevance"] + r["calls_judge_match"]
    assert r["bound_s"] == pytest.approx(calls * 0.005 * math.exp(0.5) / 128, abs=0.01)
    assert r["prompt_tokens"] > 0 and r["completion_tokens"] > 0
    for k in ("wall_s", "wall_to_bound", "stage_tails_s", "peak_rss_mb", "peak_rss_mb_small", "rss_ratio", "cpu_s",
              "rerun_wall_s", "rerun_to_cold"):
        assert r[k] > 0, k
    assert 1 <= r["peak_inflight"] <= 128
    assert (r["rerun_cached"], r["rerun_calls"]) == (calls, 0)       # the rerun made no call: all from the cache


def test_scores_of_the_committed_sample_run_are_unchanged():
    "The vectorized bootstrap and the per-prompt summaries give the committed run's scores.json exactly (what `make tables` reads)."
    runs = sorted((project_root()/"results"/"arxivbench").glob("*/*/*/records.jsonl"))
    if not runs: pytest.skip("no committed ArxivBench run under results/arxivbench")
    checked, before = 0, []
    for p in runs:
        proto = read_json(p.parent/"meta.json")["config"].get("protocol")
        if proto is None:   # scored before protocols (issue 18): its scores follow no protocol to recompute them by
            before.append(p.parent.name); continue
        recs = read_jsonl(p, allow_empty=True)
        new = json.loads(json.dumps(ab.score_records([ab.summary(r) for r in recs], protocol=proto), allow_nan=True).replace("NaN", "null"))
        assert new == read_json(p.parent/"scores.json")["subjects"], p
        checked += 1
    if not checked: pytest.skip(f"every committed ArxivBench run was scored before protocols (issue 18): {before}")
