"""AutoBench at paper scale (issue 13): a question goes to its checks and calibration as soon as it is generated, and a
paper's generation starts as soon as its extraction is parsed (item 2), with the requests of the stage-by-stage
functions (same cache keys); W4, the whole-run benchmark, at a tiny size (item 1). Timings are printed by `make bench`,
never asserted."""
import asyncio
import dataclasses
import json
import math
import time
from pathlib import Path

import pytest

from scibench.benchmarks.autobench import method as ab

from scibench.benchmarks.autobench import papers as sp

from bench import autobench as pa
from scibench.benchmarks.autobench import data as ad
from scibench.benchmarks.autobench import run as abr
from scibench.core import read_jsonl
from scibench.flow import run_stages
from scibench.judge import judge_many
from scibench.llm import LLM, ModelSpec, Request, msgs
from scibench.retrieval import embed



def _q(**kw):
    return dict(dict(qid="q", paper_id="p", type="short", level="factual", question="Which optimizer does SGA use?", options=None,
                     answer="Adam", answer_text="Adam", evidence=["S1.P1"], evidence_text="[S1.P1] SGA trains with Adam."), **kw)


def test_grading_requests_are_judge_many_s():
    "A short answer's grading is the request judge_many built (caches of earlier runs still answer), parsed as judge_many parses it."
    class Spy:
        spec = ModelSpec("spy", "http://127.0.0.1:9/v1", "spy")
        def __init__(self, text): self.asked, self.text = [], text
        def map(self, reqs, desc=None): self.asked += reqs; return [dict(ok=True, text=self.text, finish_reason="length") for _ in reqs]
    q = _q()
    for text in ('{"rationale": "same", "answer": "correct"}', '{"rationale": "no", "answer": "incorrect"}', "no idea"):
        spy = Spy(text)
        [old] = judge_many(spy, [ab.grade_prompt(q, "adam")], choices=["correct", "incorrect"], max_tokens=123)
        assert [dataclasses.replace(r, stage="grade") for r in spy.asked] == [ab.grade_request(q, "adam", 123)]   # the stage is no part of the key
        new = ab.grade_result(dict(response="adam", correct=None, failure=None), dict(ok=True, text=text, finish_reason="length"))
        assert new["correct"] == (None if old["failure"] else old["value"] == "correct")
        assert new["failure"] == (f"grader: {old['failure']}" if old["failure"] else None)
    assert ab.solve_request(q, max_tokens=50) == Request(msgs(ab.solve_prompt(q)), max_tokens=50, schema=ab.short_schema(), stage="evaluate")


class _Slow(LLM):
    """An LLM whose answers come from `pa.scripted_reply` after a delay chosen per prompt; every call is logged (kind,
    start, end). `hold`: {prompt: kinds}: that prompt is answered only once a call of each kind has been answered (or
    after `HOLD_S`), so what streams past it is decided by the flow, not by the machine's speed."""
    log: list = []
    HOLD_S = 300.0
    def __init__(self, delay, hold=None):
        super().__init__(ModelSpec("slow", "http://127.0.0.1:9/v1", "slow", max_retries=0), cache=False, progress=False,
                         transport=self.answer)
        self.delay, self.hold = delay, hold or {}
    async def answer(self, body, req):  # called within the limit, as a request to a server would be sent
        p, t0 = req.messages[-1]["content"], time.perf_counter()
        await asyncio.sleep(self.delay(p))
        while not set(self.hold.get(p, ())) <= {k for k, *_ in _Slow.log} and time.perf_counter() - t0 < self.HOLD_S:
            await asyncio.sleep(0.02)
        text = pa.scripted_reply(body)
        _Slow.log.append((_kind(p), p, t0, time.perf_counter()))
        usage = dict(prompt_tokens=len(p) // 4, completion_tokens=len(text) // 4)
        return {"choices": [{"message": {"content": text}, "finish_reason": "stop"}], "usage": usage}


def _kind(p: str) -> str:
    if p.startswith("Extract testable"): return "extract"
    if p.startswith("Write an exam question"): return "generate"
    if "Which paragraphs of the paper" in p: return "answerability"
    if "which options are correct" in p: return "ambiguity"
    if "Does the candidate answer" in p: return "grade"
    return "calibrate" if "Difficulty test" in p else "correctness"


class _Ctx:
    planning = False
    def __init__(self, out, llm): self.out, self._llm, self.provenance = Path(out), llm, {}
    def llm(self, role, name=None): return self._llm


def test_questions_flow_on_without_waiting_for_the_slowest_extraction(tmp_path):
    """One extraction window of the last paper is answered only after every later stage has answered a call (held up
    to 300 s), every other call takes 10 ms: the first paper's questions are generated, checked (every check),
    calibrated and graded while that window is still being answered. Stage by stage, no generation would go out
    before the last extraction answer (the hold times out and the check fails). The records are the stage-by-stage
    functions' records."""
    papers, _ = ad.load_split("sample")
    slow_window = ab.extraction_prompt(papers[-1], sp.paper_windows(papers[-1])[0], 2, 3000)
    embed(["load the embedder"])
    _Slow.log = []
    later = {"generate", "correctness", "answerability", "ambiguity", "calibrate", "grade"}
    llm = _Slow(lambda p: 0.01, hold={slow_window: later})
    cfg = ab.AutoBenchConfig(model="m", judge="m", solver="m", solvers="m,m+evidence", split="sample", points_per_window=2,
                             points_per_paper=2, n_resamples=20, ablate_retrieval=False)
    abr.run(cfg, _Ctx(tmp_path, llm))
    log = list(_Slow.log)
    [(_, _, s0, s1)] = [x for x in log if x[1] == slow_window]
    early = {k for k, _, t0, _ in log if t0 < s1}
    assert later <= early
    assert max(t1 for k, _, _, t1 in log if k == "extract") == s1                      # it was the last extraction answer
    # the same questions, checks and calibration as the stage-by-stage functions (answers from the same replies)
    recs = read_jsonl(tmp_path/"records.jsonl")
    # one stage at a time, over every item (each role answered by `llm`)
    each = lambda st, states: run_stages(st, states, {s.role: llm for s in st}, cfg, start=lambda s: s)
    per = [(s["extraction"], s["points"]) for s in each([ab.EXTRACT], [ab.extracting(p) for p in papers])]
    ext = [r for recs, _ in per for r in recs]
    pts = ab.number_points([m for _, ps in per for m in ab.merge_points(ps)])
    assert read_jsonl(tmp_path/"extraction.jsonl") == json.loads(json.dumps(ext))
    chosen = ab.select_points(pts, 2)
    retr = ab.Retriever(papers, ad.load_split("sample")[1])
    pmap = {p["paper_id"]: p for p in papers}
    qs = [s["q"] for s in each([ab.GENERATE], [ab.generating(pmap[j[0]["paper_id"]], j)
                                                for j in ab.generation_jobs(chosen, retr)])]
    ok = [q for q in qs if q["generation_failure"] is None]
    solving = lambda c="none": [ab.solving(q, pmap[q["paper_id"]], c) for q in ok]
    checks = dict(correctness=[ab.correctness_result(q, s["x"]) for q, s in zip(ok, each(ab.CORRECTNESS, solving("evidence")))],
                  answerability=[s["check"] for s in each([ab.ANSWERABILITY], solving())],
                  ambiguity=[s["check"] for s in each([ab.AMBIGUITY], solving())])
    sl = [(s, llm, ab.parse_solver(s)[1]) for s in ["m", "m+evidence"]]
    cal = [[s["x"] for s in each(ab.CALIBRATE, solving(c))] for _, _, c in sl]                 # by solver, then question
    answers = [ab.calibration_row(["m", "m+evidence"], list(r))[1] for r in zip(*cal)]
    by = {r["qid"]: r for r in recs}
    assert [r["qid"] for r in recs] == [q["qid"] for q in qs]
    for i, q in enumerate(ok):
        r = json.loads(json.dumps(by[q["qid"]]))
        assert {k: r[k] for k in q} == json.loads(json.dumps(q))
        assert r["checks"] == json.loads(json.dumps({st: checks[st][i] for st in ab.CHECKS}))
        assert r["calibration"] == json.loads(json.dumps(answers[i]))


def test_w4_data_is_the_real_schema_and_replies_parse(tmp_path):
    d = pa.w4_data(3, tmp_path)
    man = sp.load_manifest(d/"papers.jsonl")
    assert [r["paper_id"] for r in man] == ["w4-0000", "w4-0001", "w4-0002"] and len(sp.load_manifest(d/"related.jsonl")) == 2
    p = sp.load_paper(d/man[0]["path"], man[0]["paper_id"], man[0]["field"])
    assert len(sp.paper_windows(p)) == pa.W4_WINDOWS and 5000 < len(sp.paper_text(p).split()) < 8000
    body = lambda prompt: {"messages": [{"role": "user", "content": prompt}]}
    ok = dict(points=[], generated=[], correct=[], answerable=[])
    for k, w in enumerate(sp.paper_windows(p)[:12]):                 # most answers parse and pass; a deterministic few do not
        obj, _ = ab.parse_json(pa.w4_reply(body(ab.extraction_prompt(p, w))))
        kps = [ab.validate_point(x, p, w) for x in (obj or {}).get("knowledge_points", [None])]
        ok["points"] += [bad is None for _, bad in kps]
        for kp, bad in kps:
            if bad: continue
            kp = dict(kp, paper_id=p["paper_id"], field="NLP", kp_id=f"w4-0000#k{k}")
            ctx = [dict(paper_id=p["paper_id"], id=i, text=sp.paragraphs(p)[i], source="source") for i in kp["paragraphs"]]
            t = ab.TYPES[len(ok["generated"]) % 3]
            q = ab.question_record(kp, t, ctx, dict(ok=True, text=pa.w4_reply(body(ab.generation_prompt(p, kp, ctx, t)))), p)
            ok["generated"].append(q["generation_failure"] is None)
            if q["generation_failure"]: continue
            ok["correct"].append(ab.solve_result(q, dict(ok=True, text=pa.w4_reply(body(ab.solve_prompt(q, "evidence")))))["correct"] is not False)
            ok["answerable"].append(ab.answerability_result(q, dict(ok=True, text=pa.w4_reply(body(ab.answerability_prompt(q, p)))), p)["passed"])
    assert len(ok["points"]) > 30 and all(sum(v) / len(v) > 0.75 for v in ok.values()), {k: sum(v) / len(v) for k, v in ok.items()}


@pytest.mark.slow   # a whole AutoBench run of ~1,000 calls with its rerun: minutes on 2 busy cores (CI runs it)
def test_w4_whole_run_tiny():
    assert pa.PERF["W4"] is pa.w4_autobench
    r = pa.w4_autobench(1, latency_dist=("lognormal", 0.005, 1.0))
    print(json.dumps(r))
    assert r["status"] == "complete" and r["items"] == 1 and r["small_items"] == 1
    assert r["calls_extract"] == pa.W4_WINDOWS and r["calls_generate"] > 2 * 70 and r["calls_check_calibrate_grade"] > 4 * r["calls_generate"]
    calls = r["calls_extract"] + r["calls_generate"] + r["calls_check_calibrate_grade"]
    assert r["bound_s"] == pytest.approx(calls * 0.005 * math.exp(0.5) / 128, abs=0.01)
    assert r["prompt_tokens"] > calls * 300 and r["completion_tokens"] > calls * 5
    for k in ("wall_s", "wall_to_bound", "stage_tails_s", "peak_rss_mb", "peak_rss_mb_small", "rss_ratio", "cpu_s", "rerun_wall_s", "rerun_to_cold"):
        assert r[k] > 0, k
    assert 1 <= r["peak_inflight"] <= 128
    assert r["rerun_calls"] == 0 and r["rerun_cached"] >= calls                       # the rerun made no call: all from the cache


def test_point_ids_count_over_papers_in_order_when_the_first_paper_answers_last(tmp_path):
    """The first paper's first extraction window is answered last (0.3 s against 10 ms for every other call): its points
    still get the first ids and the question types start there, as the stage-by-stage numbering gives them (the
    numbering step runs in paper order, `scibench.flow.Step(ordered=True)`), and the later papers' questions wait."""
    papers, _ = ad.load_split("sample")
    late = ab.extraction_prompt(papers[0], sp.paper_windows(papers[0])[0], 2, 3000)
    embed(["load the embedder"])
    _Slow.log = []
    llm = _Slow(lambda p: 0.3 if p == late else 0.01)
    cfg = ab.AutoBenchConfig(model="m", judge="m", solver="m", solvers="m", split="sample", points_per_window=2,
                             points_per_paper=2, n_resamples=20, ablate_retrieval=False)
    abr.run(cfg, _Ctx(tmp_path, llm))
    [(_, _, _, t_late)] = [x for x in _Slow.log if x[1] == late]
    assert max(t1 for k, _, _, t1 in _Slow.log if k == "extract") == t_late          # it was the last extraction answer
    assert min(t0 for k, _, t0, _ in _Slow.log if k == "generate") >= t_late         # no question before its numbering
    each = lambda st, states: run_stages(st, states, {s.role: llm for s in st}, cfg, start=lambda s: s)
    pts = ab.number_points([m for s in each([ab.EXTRACT], [ab.extracting(p) for p in papers])
                            for m in ab.merge_points(s["points"])])
    assert read_jsonl(tmp_path/"knowledge_points.jsonl") == json.loads(json.dumps(pts))
    jobs = ab.generation_jobs(ab.select_points(pts, 2), ab.Retriever(papers, ad.load_split("sample")[1]))
    assert [(r["kp_id"], r["type"]) for r in read_jsonl(tmp_path/"records.jsonl")] == [(kp["kp_id"], t) for kp, t, _ in jobs]
