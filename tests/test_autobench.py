"""AutoBench: ingestion, windows, each filter stage on crafted questions, metrics, the pipeline on the
fake server (failures recorded, cache replay, tables) and, marked slow, end to end with the real model."""
import csv, io, json
from collections import Counter
from pathlib import Path
import numpy as np
import pytest

from scibench.benchmarks.autobench import method as ab

from scibench.benchmarks.autobench import papers as sp

from bench import autobench as pa
from scibench.benchmarks.autobench import data as ad
from scibench.benchmarks.autobench import run as abr
from scibench.benchmarks.autobench import views as av
from scibench.core import DataError, read_json, read_jsonl
from scibench.flow import run_stages
from scibench.llm import LLM, ModelSpec
from scibench.runs import complete_runs
from scibench.tables import build, write_all

SAMPLE = Path(__file__).resolve().parent.parent/"data"/"samples"/"autobench"


def table(spec):
    "The frame of one of AutoBench's table specs over its complete runs."
    return build(spec, complete_runs("autobench"))


# --- ingestion -------------------------------------------------------------------------------------
def test_markdown(tmp_path):
    p = tmp_path/"x.md"
    p.write_text("# Title Here\n\nintro text before any heading\n\n## A\n\npara one\nline two\n\n| h | i |\n|---|---|\n| 1 | 2 |\n\n### B\n\nlast.\n")
    paper = sp.load_paper(p, field="NLP")
    assert paper["title"] == "Title Here" and paper["paper_id"] == "x" and paper["field"] == "NLP"
    assert [s["title"] for s in paper["sections"]] == ["Preamble", "A", "B"]
    paras = sp.paragraphs(paper)
    assert paras["S2.P1"] == "para one line two" and paras["S2.P2"] == "| h | i |\n|---|---|\n| 1 | 2 |"
    assert list(paras) == ["S1.P1", "S2.P1", "S2.P2", "S3.P1"]


def test_plain_text_headings():
    paper = sp.load_paper(SAMPLE/"papers"/"stomata_light.txt", "stomata")
    assert paper["title"].startswith("Blue Light Controls")
    assert [s["title"] for s in paper["sections"]] == ["Abstract", "1 Introduction", "2 Methods", "3 Results", "4 Discussion"]
    # a sentence ending with a period is never a heading, even when short and capitalized
    t = sp.parse_text("T\n\n1 Intro\n\nShort Line Here.\n\nmore\n", "t")
    assert [s["title"] for s in t["sections"]] == ["1 Intro"] and len(t["sections"][0]["paragraphs"]) == 2


def test_s2orc_json_and_jsonl(tmp_path):
    paper = sp.load_paper(SAMPLE/"papers"/"dust_galaxies.json")
    assert paper["paper_id"] == "synthetic-dust-z2"
    assert [s["title"] for s in paper["sections"]] == ["Abstract", "Introduction", "Data and Methods", "Results", "Conclusions"]
    assert [len(s["paragraphs"]) for s in paper["sections"]] == [1, 2, 2, 2, 1]
    p = tmp_path/"many.jsonl"
    p.write_text(json.dumps({"paper_id": "a", "abstract": "Abs.", "body_text": [{"section": "I", "text": "x"}]}) + "\n" +
                 json.dumps({"paper_id": "b", "body_text": [{"section": "I"}]}) + "\n")
    with pytest.raises(DataError, match=r"many.jsonl:2: field 'body_text\[0\].text'"): sp.load_paper(p, "a")
    p.write_text(json.dumps({"paper_id": "a", "abstract": "Abs.", "body_text": [{"section": "I", "text": "x"}]}) + "\n" +
                 json.dumps({"paper_id": "b", "body_text": [{"section": "I", "text": "y"}]}) + "\n")
    assert sp.paragraphs(sp.load_paper(p, "b")) == {"S1.P1": "y"}
    with pytest.raises(DataError, match="holds 2 papers"): sp.load_paper(p)
    q = tmp_path/"bad.jsonl"; q.write_text('{"paper_id": "a"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:1: field 'body_text': missing"): sp.load_paper(q)
    (tmp_path/"x.pdf").write_text("x")
    with pytest.raises(DataError, match="unknown paper format"): sp.load_paper(tmp_path/"x.pdf")


def test_ids_are_stable():
    a = sp.load_paper(SAMPLE/"papers"/"gated_attention.md", "sga")
    b = sp.load_paper(SAMPLE/"papers"/"gated_attention.md", "sga")
    assert a == b and "S4.P2" in sp.paragraphs(a) and sp.paragraphs(a)["S4.P2"].startswith("| Model |")


def test_manifest_errors(tmp_path):
    (tmp_path/"papers.jsonl").write_text('{"paper_id": "a", "path": "nope.md", "field": "NLP"}\n')
    with pytest.raises(DataError, match=r"papers.jsonl:1: field 'path'"): sp.load_manifest(tmp_path/"papers.jsonl")
    (tmp_path/"nope.md").write_text("# t\n\n## s\n\np\n")
    (tmp_path/"papers.jsonl").write_text('{"paper_id": "a", "path": "nope.md", "field": "NLP"}\n{"paper_id": "b", "path": "x.md"}\n')
    with pytest.raises(DataError, match=r"papers.jsonl:2: field 'field': missing"): sp.load_manifest(tmp_path/"papers.jsonl")


def test_sample_split():
    papers, related = ad.load_split("sample")
    assert len(papers) >= 3 and len({p["field"] for p in papers}) == 3 and len(related) >= 1
    assert {Path(r["path"]).suffix for r in sp.load_manifest(SAMPLE/"papers.jsonl")} == {".md", ".txt", ".json"}


# --- windows ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,size,stride", [(1, 3, 2), (3, 3, 2), (4, 3, 2), (7, 3, 2), (10, 4, 1), (9, 3, 3)])
def test_window_overlap(n, size, stride):
    sec = dict(id="S1", paragraphs=[dict(id=f"S1.P{j}", text="") for j in range(1, n + 1)])
    ws = sp.windows(sec, size, stride)
    assert sorted({i for w in ws for i in w}, key=lambda s: int(s.split("P")[1])) == [f"S1.P{j}" for j in range(1, n + 1)]
    assert all(len(w) == min(size, n) for w in ws)
    for a, b in zip(ws, ws[1:]):
        assert len(set(a) & set(b)) >= size - stride                     # consecutive windows share size - stride paragraphs
    with pytest.raises(ValueError): sp.windows(sec, 2, 3)


# --- retrieval and generation helpers -------------------------------------------------------------
def test_retrieval_context_sources():
    papers, related = ad.load_split("sample")
    r = ab.Retriever(papers, related)
    kp = dict(paper_id="synthetic-dust-z2", statement="The Balmer decrement without dust is 2.86", paragraphs=["S3.P1"])
    ctx, = r.contexts([kp], k_same=2, k_related=1)
    assert [c["source"] for c in ctx] == ["source", "same paper", "same paper", "related paper"]
    assert ctx[-1]["paper_id"] == "balmer-notes"                          # the related note about the Balmer decrement
    assert all(c["id"] != "S3.P1" for c in ctx[1:3])


def test_contrastive_distractors():
    assert ab.numeric_distractors("A_V = 1.4 magnitudes") == ["A_V = 1.1 magnitudes", "A_V = 1.7 magnitudes", "A_V = 1.0 magnitudes"]
    opts, key = ab.make_options("q", "91.2%", ["88.7%"])
    assert opts["ABCD".index(key)] == "91.2%" and "88.7%" in opts and len(opts) == 4


# --- filter stages on crafted questions ----------------------------------------------------------
def _paper():
    return sp.load_paper(SAMPLE/"papers"/"gated_attention.md", "sga-long-docs", "NLP")


def _mcq(qid="q", question="How many keys does each SGA query attend to?", answer="A", opts=("64", "32", "128", "all")):
    ev = "S3.P1"
    return dict(qid=qid, paper_id="sga-long-docs", type="mcq", level="factual", question=question, options=list(opts), answer=answer,
                answer_text=opts["ABCD".index(answer)], evidence=[ev], evidence_text=f"[{ev}] " + sp.paragraphs(_paper())[ev],
                generation_failure=None)


def _llm(fs): return LLM(ModelSpec("fake", fs.base_url, "fake", max_retries=0, timeout=10), progress=False)


def _each(llm, stages, states):
    "Every state through the declared `stages` (each role answered by `llm`), in one pipeline → the states."
    return run_stages(stages, states, {s.role: llm for s in stages}, ab.AutoBenchConfig(), start=lambda s: s)


def _correctness(llm, qs, paper_of):
    "The correctness verdict of each question (`ab.CORRECTNESS`, with its evidence)."
    return [ab.correctness_result(q, s["x"]) for q, s in zip(qs, _each(llm, ab.CORRECTNESS, [ab.solving(q, paper_of(q), "evidence") for q in qs]))]


def _check(llm, stage, qs, paper=None):
    "The verdict of one check `stage` (ANSWERABILITY, AMBIGUITY) of each question."
    return [s["check"] for s in _each(llm, [stage], [ab.solving(q, paper) for q in qs])]


def test_correctness_stage(fake_server):
    fs = fake_server(reply=lambda b: json.dumps({"rationale": "r", "answer": "B"}))
    qs = [_mcq("right", answer="B", opts=("32", "64", "128", "all")), _mcq("wrong", answer="A")]
    llm = _llm(fs)
    c = _correctness(llm, qs, lambda q: _paper())
    assert [x["passed"] for x in c] == [True, False] and "key 'A'" in c[1]["reason"]
    checks = dict(correctness=c, answerability=[dict(passed=True, verified=True)]*2, ambiguity=[dict(passed=True, verified=True)]*2)
    assert ab.apply_filters(qs, checks, ("correctness",))[0] == [True, False]
    mask, counts, fate = ab.apply_filters(qs, checks, ("correctness",), on_disagree="flag")
    assert mask == [True, True] and fate[1]["flags"] and counts[1]["passed"] == 2


def test_correctness_unverified_is_counted(fake_server):
    fs = fake_server(reply=lambda b: "I think it is the second one")
    qs = [_mcq("q")]
    llm = _llm(fs)
    c = _correctness(llm, qs, lambda q: _paper())
    assert c[0]["passed"] is False and c[0]["verified"] is False and c[0]["reason"].startswith("unverified")
    _, counts, _ = ab.apply_filters(qs, dict(correctness=c), ("correctness",))
    assert counts[1]["dropped_unverified"] == 1 and counts[1]["dropped_check"] == 0


def test_uniqueness_stage():
    qs = [_mcq("a"), _mcq("b", question="How many keys does each query of SGA attend to?"),
          _mcq("c", question="Which baseline trains slowest on LegalDocs?")]
    ok = [dict(passed=True, verified=True)]*3
    mask, counts, fate = ab.apply_filters(qs, dict(correctness=ok, answerability=ok, ambiguity=ok), ("uniqueness",), uniq_threshold=0.9)
    assert mask == [True, False, True] and fate[1]["dropped_at"] == "uniqueness"
    mask, _, _ = ab.apply_filters(qs, dict(correctness=ok, answerability=ok, ambiguity=ok), ("uniqueness",), uniq_threshold=1.01)
    assert mask == [True, True, True]


def test_answerability_stage(fake_server):
    replies = {"How many keys": ["S3.P1"], "What is the gate": ["S9.P4"], "Which benchmark": ["S2.P1"]}
    fs = fake_server(reply=lambda b: json.dumps({"paragraph_ids": next(v for k, v in replies.items() if k in b["messages"][-1]["content"]),
                                                  "answer": "x"}))
    qs = [_mcq("cited"), _mcq("ghost", question="What is the gate made of?"),
          dict(_mcq("unsupported", question="Which benchmark has documents up to 16,000 tokens?"), answer_text="ArXiv-Topics and LegalDocs")]
    llm, paper = _llm(fs), _paper()
    c = _check(llm, ab.ANSWERABILITY, qs, paper)
    assert [x["passed"] for x in c] == [True, False, False]
    assert "no existing paragraph" in c[1]["reason"] and "0%" in c[2]["reason"]


def test_ambiguity_stage(fake_server):
    fs = fake_server(reply=lambda b: json.dumps({"correct_options": ["A", "C"] if "two correct" in b["messages"][-1]["content"] else ["A"]}))
    qs = [_mcq("one"), _mcq("two", question="Which are true (two correct)?"), dict(_mcq("tf"), type="tf", options=None, answer="true")]
    llm = _llm(fs)
    c = _check(llm, ab.AMBIGUITY, qs)
    assert [x["passed"] for x in c] == [True, False, True] and c[2]["applicable"] is False
    assert fs.calls == 2                                                   # true/false is not sent to the judge


def test_stage_order_and_counts():
    qs = [_mcq(f"q{i}", question=q) for i, q in enumerate(["How many keys per query?", "Which dataset has legal contracts?",
                                                            "What does the straight-through estimator do?"])]
    P = lambda *v: [dict(passed=bool(x), verified=True, reason="") for x in v]
    checks = dict(correctness=P(1, 1, 0), answerability=P(0, 1, 1), ambiguity=P(1, 1, 1))
    mask, counts, fate = ab.apply_filters(qs, checks)
    assert mask == [False, True, False]
    assert [(c["entered"], c["passed"]) for c in counts] == [(3, 3), (3, 2), (2, 2), (2, 1), (1, 1)]
    assert [f["dropped_at"] for f in fate] == ["answerability", None, "correctness"]
    with pytest.raises(ValueError): ab.apply_filters(qs, checks, on_disagree="ignore")


# --- metrics ---------------------------------------------------------------------------------------
def test_diversity():
    assert ab.diversity(np.array([[1.0, 0.0]]*4)) == pytest.approx(0.0)
    assert ab.diversity(np.eye(4)) == pytest.approx(1.0)
    assert np.isnan(ab.diversity(np.eye(1)))
    v, lo, hi, n = ab.diversity_ci(np.eye(5), n_resamples=200)
    assert v == pytest.approx(1.0) and lo == pytest.approx(1.0) and n == 5     # pairs of the same question are not counted


def test_discrimination_and_difficulty():
    assert ab.discrimination([[1, 0], [1, 0]]) == pytest.approx(1.0)
    assert ab.discrimination([[0, 1], [0, 1]]) == pytest.approx(1.0)         # solvers are ranked by accuracy, not by order
    assert ab.discrimination([[1, 1], [0, 0]]) == pytest.approx(0.0)
    assert ab.discrimination([[1, 0, 0, 0], [1, 1, 0, 0]]) == pytest.approx((0.5 + 1.0) / 2)
    assert np.isnan(ab.discrimination([[1], [0]]))                          # one solver cannot discriminate
    assert [ab.difficulty(p) for p in (1.0, 0.5, 0.0, float("nan"))] == ["easy", "medium", "hard", "unknown"]
    np.testing.assert_allclose(ab.pass_rates([[1, np.nan], [0, 1]]), [1.0, 0.5])   # a failed answer is not a wrong one


def test_set_metrics_counts_everything():
    qs = [dict(level="factual", type="mcq"), dict(level="reasoning", type="tf"), dict(level="factual", type="short")]
    m = ab.set_metrics(qs, [True, False, True], np.eye(3), np.array([[1, 0], [1, 1], [np.nan, np.nan]]), n_resamples=50)
    assert (m["generated"], m["kept"]) == (3, 2) and m["survival"]["mean"] == pytest.approx(2/3)
    assert (m["attempted"], m["generation_failures"]) == (3, 0)
    assert m["levels"] == {"factual": 2} and m["difficulty"] == {"medium": 1, "unknown": 1}


def test_human_review_roundtrip(tmp_path):
    text = ad.review_csv([dict(qid="q0", kept=True, question="Q?", answer="A", options=["x", "y"]), dict(qid="q1", kept=False)])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["qid"] for r in rows] == ["q0"] and set(ad.REVIEW_COLUMNS) == set(rows[0])
    p = tmp_path/"review_reviewed.csv"
    def write(vals):
        with p.open("w", newline="") as f:
            w = csv.DictWriter(f, ad.REVIEW_COLUMNS); w.writeheader()
            for i, v in enumerate(vals): w.writerow({**rows[0], "qid": f"q{i}", "reviewer_correct": v})
    write(["yes", "no", "", "YES"])
    m, lo, hi, n = ad.human_correctness(p)
    assert (m, n) == (pytest.approx(2/3), 3)                    # blank rows are not reviewed, not counted
    write(["maybe"])
    with pytest.raises(DataError, match=r"review_reviewed.csv:2: field 'reviewer_correct'"): ad.human_correctness(p)
    assert ad.human_correctness(tmp_path/"none.csv") is None


# --- the pipeline on the fake server, through scibench.run.execute ------------------------------------
@pytest.fixture
def fake_models(fake_server, tmp_path, monkeypatch, results):
    fs = fake_server(reply=pa.scripted_reply, permanent="The cry1 mutant, which lacks")   # one window of the biology paper always fails
    monkeypatch.setenv("SCIBENCH_MODELS", str(pa.fake_registry(fs.base_url, tmp_path/"models.toml")))
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path/"figures"))
    return fs


P = dict(model="fake-gen", judge="fake-judge", solver="fake-solver", solvers="fake-solver,fake-solver+evidence", points_per_paper=3,
         n_resamples=100)


def _strict_json(path):
    def bad(c): raise ValueError(f"{path}: {c} is not strict JSON")
    return json.loads(Path(path).read_text(), parse_constant=bad)


def test_pipeline_fake(fake_models, run_bench, results):
    # the poisoned paragraph is in every answerability prompt of the biology paper (the whole paper) and in some
    # generation prompts (retrieved context): more than 10% of the questions fail, so the run would be partial;
    # a higher --max-failure-share keeps it complete for the tables
    # extraction sees 400 characters of the other sections, so the poisoned paragraph stays in one window's prompts only
    PF = {**P, "evaluate_models": "fake-solver+evidence", "extract_context_chars": 400, "control_set": "control.jsonl"}
    meta, d = run_bench("autobench", PF, max_failure_share=0.5)
    assert meta["status"] == "complete", {k: meta.get(k) for k in ("status_reason", "error", "failures_by_reason")}
    assert d.parent == results/"autobench"/"sample"/"fake-gen"
    assert meta["failures"] / meta["n"] > 0.1 and all("http 400" in r for r in meta["failures_by_reason"])
    assert {r.split(":")[0] for r in meta["failures_by_reason"]} == {"generation", "check answerability"}
    s = _strict_json(d/"scores.json")                                                # no NaN anywhere
    ext = read_jsonl(d/"extraction.jsonl")
    failed = [r for r in ext if r["failure"]]
    assert len(failed) >= 1 and all("http 400" in r["failure"] for r in failed)      # recorded with its reason
    assert s["extraction"]["failed"] == len(failed) and s["extraction"]["windows"] == len(ext)
    recs = read_jsonl(d/"records.jsonl")
    assert all(isinstance(r["id"], str) and r["id"] == r["qid"] and "failure" in r for r in recs)
    assert len({r["id"] for r in recs}) == len(recs) == meta["n"]
    assert meta["failures"] == sum(r["failure"] is not None for r in recs)
    assert all(r["failure"] is None or r["failure"].split(":")[0].split(" ")[0] in ("generation", "check", "calibration") for r in recs)
    full = [r for r in recs if r["variant"] == "full"]
    assert len(full) == s["main"]["attempted"] == s["stages"][0]["entered"]
    assert s["main"]["generated"] == s["stages"][0]["passed"] == len(full) - s["main"]["generation_failures"]
    assert sum(r["kept"] for r in recs) == s["main"]["kept"] == len(read_jsonl(d/"benchmark.jsonl"))
    for st in s["stages"][1:]:                                                       # the funnel is consistent
        assert st["entered"] - st["passed"] == st["dropped_check"] + st["dropped_unverified"]
    assert {r["dropped_at"] for r in full if not r["kept"]} <= {"generation", *ab.STAGES}
    # the control set went through the same checks and calibration, never into the benchmark
    ctl = [r for r in recs if r["variant"] == "control"]
    assert len(ctl) == 3 == s["control"]["questions"] and not any(r["kept"] for r in ctl)
    assert s["control"]["metrics"]["kept"] == sum(ad.CONTROL in r["kept_by"] for r in ctl)
    assert all(r["qid"].startswith("control:") and r["checks"]["correctness"] is not None for r in ctl)
    # review.csv: every configuration's kept questions, once each, naming the configurations
    rev = list(csv.DictReader((d/"review.csv").open()))
    assert len({r["qid"] for r in rev}) == len(rev)
    kept_any = {r["qid"] for r in recs if r["kept_by"] or r["flags"]}
    assert {r["qid"] for r in rev} == kept_any and kept_any > {r["qid"] for r in recs if r["kept"]}
    for r in rev:
        assert set(r["configurations"].split("; ")) == set(next(x["kept_by"] for x in recs if x["qid"] == r["qid"]))
    assert set(s["ablation"]) == {*ad.ABLATIONS, "w/o Retrieval Augmentation", "Factual-level only"}
    assert s["ablation"]["w/o Correctness Verification"]["kept"] >= s["ablation"]["Full MDQF"]["kept"]
    assert all(r["difficulty"] in ("easy", "medium", "hard", "unknown") for r in recs)
    assert s["setup"]["solver_is_generator"] is False
    assert meta["config"]["solvers"] == P["solvers"] and "types" not in meta["config"]   # every type (retired)
    # the evaluated model, inside the run
    e = _strict_json(d/"eval"/"fake-solver-evidence"/"scores.json")
    o = e["subsets"]["overall"]
    assert o["total"] == s["main"]["kept"] and o["n"] + o["failures"] == o["total"] and e["context"] == "evidence"
    assert all("id" in r and "failure" in r for r in read_jsonl(d/"eval"/"fake-solver-evidence"/"records.jsonl"))
    heads = {h["name"]: h for h in meta["headline"]}
    assert heads["kept questions"]["value"] == s["main"]["kept"] and heads["survival (kept / generated)"]["n"] == s["main"]["generated"]
    assert heads["accuracy fake-solver+evidence"]["n"] == o["n"]
    # tables from results/ only, deterministic
    calls = fake_models.calls
    paths = write_all("autobench", av.TABLES)
    first = {p: Path(p).read_bytes() for p in paths if str(p).endswith(".md")}
    write_all("autobench", av.TABLES)
    assert fake_models.calls == calls and all(Path(p).read_bytes() == b for p, b in first.items())
    main = (results/"tables"/"autobench_main.csv").read_text()
    assert "paper" in main and "91.3" in main and "Combined" in main and f"sample/fake-gen/{d.name}" in main
    assert "solvers=fake-solver" in main                                             # the settings column
    assert "synthetic sample" in (results/"tables"/"autobench_main.md").read_text()  # the caption says what the sample is
    abl = (results/"tables"/"autobench_ablation.csv").read_text()
    assert "0.78" in abl and "w/o Uniqueness Check" in abl and ad.CONTROL in abl
    assert ab.FILTER_NOTE in main                                                   # fake-solver filters and calibrates: labelled
    ev = (results/"tables"/"autobench_eval.csv").read_text()
    assert "fake-solver" in ev and "evidence" in ev
    # a rerun is served from the cache: only the failed requests are sent again
    failed_requests = meta["usage"]["total"]["failures"]
    assert failed_requests >= 1
    meta2, d2 = run_bench("autobench", PF)
    assert fake_models.calls - calls == failed_requests and d2 != d and meta2["status"] == "partial"
    assert read_jsonl(d2/"records.jsonl") == recs


def test_rerun_makes_zero_calls(fake_server, run_bench, tmp_path, monkeypatch):
    fs = fake_server(reply=pa.scripted_reply)
    monkeypatch.setenv("SCIBENCH_MODELS", str(pa.fake_registry(fs.base_url, tmp_path/"models.toml")))
    p = {**P, "limit": 1, "ablate_retrieval": False, "evaluate_models": "fake-solver"}
    meta, _ = run_bench("autobench", p)
    n = fs.calls
    assert meta["status"] == "complete" and n > 0 and meta["usage"]["total"]["calls"] == n
    meta2, _ = run_bench("autobench", p)
    assert fs.calls == n and meta2["usage"]["total"]["calls"] == 0
    assert meta2["usage"]["total"]["cached"] == meta2["usage"]["total"]["requests"] == meta["usage"]["total"]["requests"]


# a non-default value of every parameter, as the command line gives them (strings)
EVERY = dict(model="fake-solver", split="sample", limit="1", judge="fake-solver", solver="fake-judge", solvers="fake-gen+paper,fake-judge",
             evaluate_models="fake-gen,fake-judge+evidence", eval_max_tokens="50",
             window_size="4", window_stride="1", max_windows="2", points_per_window="2",
             points_per_paper="1", merge_threshold="0.8", k_same="1", k_related="0", ablate_retrieval="false",
             uniq_threshold="0.95", support_share="0.4", on_disagree="flag", extract_max_tokens="100", generate_max_tokens="100", check_max_tokens="50",
             n_resamples="10", extract_context_chars="500", hard_below="0.2", easy_above="0.8",
             control_set="control.jsonl", protocol="paper", seed="3", ids="stomata-blue-light")


def test_every_parameter_accepted_by_dry_run(fake_models, run_bench, results):
    from scibench.bench import params_of, coerce
    ps = {p.name: p for p in params_of(ab.AutoBenchConfig)}
    assert set(EVERY) == set(ps)                                                     # the test covers every parameter
    for k, v in EVERY.items():
        meta, d = run_bench("autobench", {**P, k: v}, dry_run=True)
        assert meta["status"] == "dry-run" and d is None and meta["config"][k] == coerce(ps[k], v), k
        assert meta["config"][k] != ps[k].default or k in ("split", "protocol"), k  # the only split here, the only protocol
    meta, _ = run_bench("autobench", {k: v for k, v in EVERY.items() if k != "ids"}, dry_run=True)  # ids: not with limit
    roles = {(r["role"], r["model"]) for r in meta["plan"]}
    assert roles == {("model", "fake-solver"), ("solver", "fake-judge"), ("judge", "fake-solver"), ("solvers", "fake-gen"),
                     ("solvers", "fake-judge"), ("evaluate_models", "fake-gen"), ("evaluate_models", "fake-judge")}
    assert fake_models.calls == 0 and not fake_models.headers_seen                 # a dry run sends nothing, not even a ping
    assert not results.exists() or not any(results.rglob("meta.json"))


def test_help_lists_every_parameter():
    from scibench.bench import get_benchmark
    from scibench.cli import run_parser
    b = get_benchmark("autobench")
    text = run_parser(b).format_help()                      # argparse formats every doc (a bare % would break it)
    assert all(f"--{p.name.replace('_', '-')}" in text for p in b.params())


def _plan(cfg, names=()) -> dict:
    "The derived plan of `cfg` by (role, model); `names`: models outside the registry (ad-hoc endpoints, never called)."
    from scibench.bench import get_benchmark
    from scibench.run import derive_plan, resolve
    b = get_benchmark("autobench")
    return {(r["role"], r["model"]): r for r in derive_plan(b, cfg, resolve(b, cfg, {n: {"base_url": "http://127.0.0.1:9/v1"} for n in names}))}


def test_plan_counts():
    papers, _ = ad.load_split("sample")
    cfg = ab.AutoBenchConfig(points_per_paper=2, evaluate_models="local,local+paper")
    rows = _plan(cfg)
    n_win = sum(len(sp.windows(s)) for p in papers for s in p["sections"])
    n_q = 2 * len(papers)
    assert rows[("model", "local")]["calls"] == n_win + 2 * n_q                      # extraction + questions with and without retrieval
    assert rows[("model", "local")]["completion_tokens"] == n_win * 400 + 2 * n_q * 300
    assert rows[("solver", "local")]["calls"] == 2 * n_q
    assert rows[("solvers", "local")]["calls"] == 2 * 2 * n_q                       # solver and solver+evidence, both variants
    assert rows[("evaluate_models", "local")]["calls"] == 2 * n_q                   # two contexts, full variant only
    assert all(r["prompt_tokens"] > 0 for r in rows.values())
    no_abl = _plan(ab.AutoBenchConfig(points_per_paper=2, ablate_retrieval=False))
    assert no_abl[("model", "local")]["calls"] == n_win + n_q and ("evaluate_models", "local") not in no_abl


def test_plan_bounds_the_run(fake_models, run_bench):
    meta, d = run_bench("autobench", {**P, "limit": 2, "evaluate_models": "fake-gen"})
    plan = _plan(ab.AutoBenchConfig(**{**P, "limit": 2, "evaluate_models": "fake-gen"})).values()
    assert sum(r["calls"] for r in plan) >= meta["usage"]["total"]["requests"] > 0


@pytest.mark.parametrize("params,msg", [(dict(window_size="2", window_stride="3"), "window_stride"),
                                        (dict(evaluate_models="fake-gen+book"), "suffix"),
                                        (dict(types="tf"), "retired"), (dict(stages="correctness"), "retired"),
                                        (dict(split="nosuch"), "make data"),
                                        (dict(on_disagree="ignore"), "not one of"), (dict(solvers="nobody"), "unknown model")])
def test_bad_config_stops_before_anything(fake_models, run_bench, results, params, msg):
    from scibench.bench import ConfigError
    with pytest.raises(ConfigError, match=msg): run_bench("autobench", {**P, **params})
    assert fake_models.calls == 0 and not results.exists()


@pytest.mark.parametrize("params,msg", [(dict(merge_threshold="7"), r"'merge_threshold' must be <= 1, got 7"),
                                        (dict(uniq_threshold="-0.5"), r"'uniq_threshold' must be >= 0, got -0.5"),
                                        (dict(check_max_tokens="0"), r"'check_max_tokens' must be >= 1, got 0"),
                                        (dict(k_related="-1"), "'k_related' must be >= 0, got -1")])
def test_out_of_range_parameters_stop_before_anything(fake_models, run_bench, results, params, msg):
    "Issue 20: an AutoBench number outside its range is refused with one line naming it and its range."
    from scibench.bench import ConfigError
    with pytest.raises(ConfigError, match=msg) as e: run_bench("autobench", {**P, **params})
    assert "\n" not in str(e.value) and fake_models.calls == 0 and not results.exists()


def test_missing_control_set_names_the_file(fake_models, run_bench, results):
    "Issue 20: no download provides a control set, so a missing one names the file, not `make data`."
    from scibench.bench import ConfigError
    with pytest.raises(ConfigError, match="control set 'nosuch.jsonl' not found in data/samples/autobench/") as e:
        run_bench("autobench", {**P, "control_set": "nosuch.jsonl"})
    assert "make data" not in str(e.value) and "\n" not in str(e.value)
    assert fake_models.calls == 0 and not results.exists()


def test_generation_failures_are_records(fake_server, run_bench, tmp_path, monkeypatch):
    def reply(b):
        p = b["messages"][-1]["content"]
        return "not json at all" if p.startswith("Write an exam question") else pa.scripted_reply(b)
    fs = fake_server(reply=reply)
    monkeypatch.setenv("SCIBENCH_MODELS", str(pa.fake_registry(fs.base_url, tmp_path/"models.toml")))
    meta, d = run_bench("autobench", {**P, "limit": 1, "ablate_retrieval": False, "points_per_paper": 2})
    s = _strict_json(d/"scores.json")
    recs = read_jsonl(d/"records.jsonl")
    assert len(recs) == 2 and all(r["generation_failure"] == "no JSON object in response" for r in recs)
    assert all(r["failure"] == "generation: no JSON object in response" for r in recs)
    assert s["main"]["kept"] == 0 and s["stages"][0]["dropped_unverified"] == 2 and s["generation"]["full"]["failures"] == 2
    assert meta["status"] == "failed" and meta["failures_by_reason"] == {"generation: no JSON object in response": 2}
    assert s["main"]["diversity"]["value"] is None                                    # NaN is written as null


def test_registration():
    from scibench.bench import get_benchmark
    b = get_benchmark("autobench")
    assert b.config is ab.AutoBenchConfig and b.run is abr.run and b.data is ad.data_files and b.tables is av.TABLES
    assert b.stub_reply is abr.stub_reply and b.stages is ab.FLOW and [s.name for s in b.stages][0] == "extract"
    assert b.downloaders == [] and pa.PERF == {"AB1": pa.perf_pipeline, "W4": pa.w4_autobench}
    assert not getattr(b, "perf", None)                                      # the figures live in bench.autobench
    assert [r["evaluate_models"] for r in b.default_runs] == ["local"] and all(b.make_config(r) for r in b.default_runs)
    assert not any(hasattr(ab, n) for n in ("DEFAULT_RUNS", "DOWNLOADERS", "PERF", "scripted_reply", "fake_registry"))
    assert b.data(b.make_config({})) and all(p.exists() for p in b.data(b.make_config({})))


# --- end to end with the real embedded model -------------------------------------------------------
@pytest.mark.slow
def test_end_to_end_local(local_server, run_bench):
    meta, d = run_bench("autobench", dict(model="local", judge="local", limit=1, points_per_paper=2, points_per_window=2, max_windows=2,
                                          extract_max_tokens=200, generate_max_tokens=180, check_max_tokens=80, ablate_retrieval=False,
                                          n_resamples=100, evaluate_models="local"))
    s = read_json(d/"scores.json")
    recs = read_jsonl(d/"records.jsonl")
    ext = read_jsonl(d/"extraction.jsonl")
    assert len(ext) == 2 and all((r["failure"] is None) or isinstance(r["failure"], str) for r in ext)
    assert s["main"]["attempted"] == len(recs) == s["extraction"]["selected"]
    assert s["calibration"]["note"] == ab.FILTER_NOTE                               # one model: calibration labelled, own requests
    assert all(set(r["calibration"]) == {"local", "local+evidence"} for r in recs if r["generation_failure"] is None)
    for r in recs:                                      # every question is either a failure with a reason or fully checked
        assert "id" in r and "failure" in r
        if r["generation_failure"] is None:
            assert all(r["checks"][k]["reason"] for k in ("correctness", "answerability", "ambiguity"))
    assert meta["status"] in ("complete", "partial", "failed") and meta["usage"]["total"]["calls"] > 0
    assert s["setup"]["solver_is_generator"] is True


# --- issue 11: calibration by distinct solvers, filter details, review of every configuration ------
def _cfg(**kw): return ab.AutoBenchConfig(**kw)


def test_default_calibration_solvers_exclude_generator_and_filter_solver():
    s, sl, note = ab.solvers_of(_cfg(model="gen", judge="j", solver="s", evaluate_models="e1,e2+evidence,gen"))
    assert s == "s" and sl == ["j", "e1", "e2"] and note is None
    s, sl, note = ab.solvers_of(_cfg(model="gen", judge="j", evaluate_models="e1"))     # the judge is the filter solver here
    assert s == "j" and sl == ["e1", "e1+evidence"] and note is None                  # one model: closed and open book
    s, sl, note = ab.solvers_of(_cfg())                                                # the sample: everything is `local`
    assert sl == ["local", "local+evidence"] and note == ab.FILTER_NOTE
    assert ab.solvers_of(_cfg(model="gen", solver="s", solvers="gen,x"))[2] == ab.GENERATOR_NOTE


def test_calibration_requests_differ_from_the_filter(fake_server):
    prompts = []
    def reply(b):
        prompts.append(b["messages"][-1]["content"]); return pa.scripted_reply(b)
    fs = fake_server(reply=reply)
    qs = [_mcq("q1"), dict(_mcq("q2", question="Is SGA faster than the sliding-window baseline?"), type="tf", options=None, answer="true",
                           answer_text="true")]
    llm, papers = _llm(fs), {"sga-long-docs": _paper()}
    _correctness(llm, qs, lambda q: papers[q["paper_id"]])
    assert fs.calls == 2
    sl = [(s, llm, ab.parse_solver(s)[1]) for s in ["fake+evidence", "fake"]]
    cal = [[s["x"] for s in _each(llm, ab.CALIBRATE, [ab.solving(q, papers[q["paper_id"]], c) for q in qs])] for _, _, c in sl]
    rows = [ab.calibration_row([s for s, _, _ in sl], list(r)) for r in zip(*cal)]
    C, answers = np.array([r[0] for r in rows]), [r[1] for r in rows]
    assert fs.calls == 6                                   # every calibration answer is a fresh call, none the filter's cached one
    assert not set(prompts[:2]) & set(prompts[2:]) and all("Difficulty test" in p for p in prompts[2:])
    assert C.shape == (2, 2) and all(set(a) == {"fake+evidence", "fake"} for a in answers)


def test_sample_run_calibrates_apart_from_the_filter(fake_server, run_bench, tmp_path, monkeypatch):
    prompts = []
    def reply(b):
        prompts.append(b["messages"][-1]["content"]); return pa.scripted_reply(b)
    fs = fake_server(reply=reply)
    monkeypatch.setenv("SCIBENCH_MODELS", str(pa.fake_registry(fs.base_url, tmp_path/"models.toml")))
    # one model filters and calibrates (as in the sample run): the calibration still gets its own requests
    meta, d = run_bench("autobench", dict(model="fake-gen", judge="fake-solver", points_per_paper=3, ablate_retrieval=False,
                                          n_resamples=20, on_disagree="flag"))
    s = read_json(d/"scores.json"); recs = read_jsonl(d/"records.jsonl")
    c = s["calibration"]
    assert c["solvers"] == ["fake-solver", "fake-solver+evidence"] and c["note"] == ab.FILTER_NOTE and c["default"] is True
    n_ok = sum(r["generation_failure"] is None for r in recs)
    assert sum("Difficulty test" in p for p in prompts) == 2 * n_ok > 0
    # every calibration request reached the server (the cache starts empty), none shares a prompt with the filter's
    assert not {p for p in prompts if "Difficulty test" in p} & {p for p in prompts if "Difficulty test" not in p}


def test_difficulty_bands_and_retired_balance():
    assert [ab.difficulty(p) for p in (0.7, 2/3, 1/3, 0.3)] == ["easy", "medium", "medium", "hard"]
    assert [ab.difficulty(p, 0.5, 0.5) for p in (0.6, 0.5, 0.4)] == ["easy", "medium", "hard"]
    from scibench.bench import get_benchmark
    b = get_benchmark("autobench")
    assert not hasattr(b.make_config(dict(balance="")), "balance")          # the committed run's value still loads
    with pytest.raises(ab.ConfigError, match="retired"): b.make_config(dict(balance="0.3,0.4,0.3"))
    with pytest.raises(ab.ConfigError, match="hard_below"): ab.validate(_cfg(hard_below=0.8, easy_above=0.2))


def test_ambiguity_single_marked_option_must_be_the_key(fake_server):
    fs = fake_server(reply=lambda b: json.dumps({"correct_options": ["B"]}))
    llm = _llm(fs)
    c = _check(llm, ab.AMBIGUITY, [_mcq("key-a", answer="A"), _mcq("key-b", answer="B")])
    assert [x["passed"] for x in c] == [False, True] and c[0]["verified"] is True and "not the key" in c[0]["reason"]


def test_text_fallback_does_not_read_the_article_as_option_a(fake_server):
    assert ab.parse_answer("I think a model would pick C here", "ABCD")[0] == "C"
    assert ab.parse_answer("A model cannot know this", "ABCD")[0] is None
    assert ab.parse_answer("The answer is B.", "ABCD")[0] == "B" and ab.parse_answer("answer: d", "ABCD")[0] == "D"
    fs = fake_server(reply=lambda b: "Well, a model trained on this would say D")
    llm = _llm(fs)
    r = [s["x"] for s in _each(llm, ab.EVALUATE, [ab.solving(_mcq("q", answer="D"))])]
    assert r[0]["response"] == "D" and r[0]["correct"] is True


def test_extraction_sees_the_other_sections_within_a_budget():
    paper = _paper()
    text = sp.paragraphs(paper)["S3.P2"]                          # the second paragraph of another section
    p = ab.extraction_prompt(paper, ["S1.P1"])
    assert text in p and "S3.P2" in ab.shown_ids(paper, ["S1.P1"])
    small = ab.extraction_prompt(paper, ["S1.P1"], others_chars=400)
    assert text not in small and len(small) < len(p) and "S3.P2" not in ab.shown_ids(paper, ["S1.P1"], 400)
    long_para = "x" * 50 + " word" * 200
    big = sp.make_paper("p", "T", [("A", ["The window paragraph is here."]), ("B", [long_para])])
    assert len(ab.extraction_prompt(big, ["S1.P1"], others_chars=3000)) > len(long_para)   # no 300-character excerpt


def test_survival_is_over_generated_questions():
    qs = [dict(level="factual", type="mcq", generation_failure=None), dict(level="factual", type="tf", generation_failure=None),
          dict(level="factual", type="tf", generation_failure="no JSON object")]
    m = ab.set_metrics(qs, [True, False, False], np.eye(3), np.ones((3, 2)), n_resamples=20)
    assert m["survival"]["mean"] == pytest.approx(1/2) and m["survival"]["n"] == 2
    assert (m["attempted"], m["generated"], m["generation_failures"], m["kept"]) == (3, 2, 1, 1)


def _write_control(tmp_path, rows):
    p = tmp_path/"control.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_control_set_schema_and_errors(tmp_path):
    papers = {"sga-long-docs": _paper()}
    good = dict(qid="h1", paper_id="sga-long-docs", type="mcq", question="How many keys does each query attend to?",
                options=["16", "64"], answer="B", evidence=["S3.P1"])
    qs = ad.load_control_set(_write_control(tmp_path, [good]), papers)
    assert qs[0]["answer_text"] == "64" and qs[0]["variant"] == "control" and qs[0]["qid"] == "control:h1"
    for bad, line, field in [(dict(good, answer="E"), 2, "answer"), (dict(good, paper_id="nope"), 2, "paper_id"),
                             (dict(good, evidence=["S9.P9"]), 2, "evidence"), (dict(good, type="essay"), 2, "type"),
                             (dict(good, type="tf", answer="maybe", options=None), 2, "answer"), (dict(good, options=["x"]), 2, "options")]:
        with pytest.raises(DataError, match=rf"control.jsonl:{line}: field '{field}'"):
            ad.load_control_set(_write_control(tmp_path, [dict(good, qid="h0"), dict(bad, qid="h2")]), papers)
    with pytest.raises(DataError, match=r"control.jsonl:2: field 'qid'"):
        ad.load_control_set(_write_control(tmp_path, [good, good]), papers)
    with pytest.raises(DataError, match=r"control.jsonl:1: field 'question': missing"):
        ad.load_control_set(_write_control(tmp_path, [{k: v for k, v in good.items() if k != "question"}]), papers)


def test_human_correctness_per_configuration(tmp_path):
    recs = [dict(qid="q0", kept=True, kept_by=["main", "Full MDQF", "w/o Correctness Verification"]),
            dict(qid="q1", kept=False, kept_by=["w/o Correctness Verification"]),
            dict(qid="control:h1", variant="control", kept=False, kept_by=[ad.CONTROL]), dict(qid="q2", kept=False, kept_by=[])]
    rows = list(csv.DictReader(io.StringIO(ad.review_csv(recs))))
    assert [r["qid"] for r in rows] == ["q0", "q1", "control:h1"]
    p = tmp_path/"review_reviewed.csv"
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, ad.REVIEW_COLUMNS); w.writeheader()
        for r, v in zip(rows, ["yes", "no", "yes"]): w.writerow({**r, "reviewer_correct": v})
    assert ad.human_correctness(p, "main")[::3] == (1.0, 1)
    assert ad.human_correctness(p, "w/o Correctness Verification")[::3] == (0.5, 2)
    assert ad.human_correctness(p, ad.CONTROL)[::3] == (1.0, 1)
    assert ad.human_correctness(p, "w/o Uniqueness Check") is None


def test_ablation_table_reads_reviews(fake_models, run_bench, results):
    meta, d = run_bench("autobench", {**P, "limit": 1, "ablate_retrieval": False, "control_set": "control.jsonl"}, max_failure_share=1.0)
    rev = list(csv.DictReader((d/"review.csv").open()))
    assert rev and all(r["configurations"] for r in rev)
    with (d/"review_reviewed.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, ad.REVIEW_COLUMNS); w.writeheader()
        for r in rev: w.writerow({**r, "reviewer_correct": "yes"})
    t = table(av.ABLATION_TABLE); ours = t[t.source == "scibench"].set_index("configuration")
    for name in ad.ABLATIONS:
        n = sum(name in r["configurations"].split("; ") for r in rev)
        assert ours.loc[name, "reviewed"] == (str(n) if n else "–"), name
    assert ours.loc["w/o Retrieval Augmentation", "human correctness %"].startswith("not run")
    m = table(av.MAIN_TABLE); comb = m[(m.source == "scibench") & (m.area == "Combined")].iloc[0]
    assert comb["human correctness %"] != "not reviewed" and ab.FILTER_NOTE in comb["calibration"]


def test_plan_counts_calibration_and_control():
    papers, _ = ad.load_split("sample")
    n_q = 2 * len(papers)
    rows = _plan(_cfg(model="a", judge="b", evaluate_models="c", points_per_paper=2, ablate_retrieval=False), "abc")
    assert rows[("solvers", "c")]["calls"] == 2 * n_q                  # the judge b is the filter solver: c, closed and open book
    assert ("solvers", "a") not in rows and ("solvers", "b") not in rows
    base = _plan(_cfg(points_per_paper=2, ablate_retrieval=False))
    ctl = _plan(_cfg(points_per_paper=2, ablate_retrieval=False, control_set="control.jsonl"))
    assert ctl[("solvers", "local")]["calls"] - base[("solvers", "local")]["calls"] == 2 * 3   # 3 control questions, 2 solvers
    assert ctl[("solver", "local")]["calls"] - base[("solver", "local")]["calls"] == 3
    with pytest.raises(FileNotFoundError, match="control set"): _plan(_cfg(control_set="nosuch.jsonl"))


def test_derived_plan_makes_the_calls_of_a_run_on_the_stub(fake_server, run_bench):
    """On the sample, the plan's calls per role are the requests of a real run against `FakeServer(reply=stub_reply)`:
    the same answers, so the same questions survive (the stub's assumptions hold in the real run: no points merge, no
    question is a near duplicate, every question passes every filter and is evaluated)."""
    from scibench.bench import get_benchmark
    from scibench.run import derive_plan, resolve
    b = get_benchmark("autobench")
    fs = fake_server(reply=b.stub_reply)
    params, ep = dict(model="fake", judge="fake", evaluate_models="fake", n_resamples=20), {"fake": {"base_url": fs.base_url}}
    cfg = b.make_config(params)
    planned, real = Counter(), Counter()
    for r in derive_plan(b, cfg, resolve(b, cfg, ep)): planned[r["role"]] += r["calls"]
    meta, d = run_bench("autobench", params, endpoints=ep)
    for k, u in meta["usage"].items():
        if k != "total": real[k.split(":")[0]] += u["requests"]
    assert meta["status"] == "complete" and planned == real and fs.calls == sum(real.values())
    s = read_json(d/"scores.json")
    assert s["main"]["kept"] == s["main"]["generated"] == s["generation"]["full"]["questions"] > 0    # every question survived


def test_control_set_is_evaluated_in_a_run(fake_server, run_bench, tmp_path, monkeypatch, results):
    "Issue 21: a run evaluates its models on the sample's control set beside the kept questions."
    fs = fake_server(reply=pa.scripted_reply)
    monkeypatch.setenv("SCIBENCH_MODELS", str(pa.fake_registry(fs.base_url, tmp_path/"models.toml")))
    p = {**P, "limit": 1, "ablate_retrieval": False, "evaluate_models": "fake-solver", "control_set": "control.jsonl",
         "on_disagree": "flag", "support_share": 0.3}
    meta, d = run_bench("autobench", p)
    s = read_json(d/"scores.json")
    e = read_json(d/"eval"/"fake-solver.control"/"scores.json")
    assert e["questions"] == 1 and e["benchmark"] == "control.jsonl: the human-written control questions"   # limit 1: one paper's
    assert set(s["evaluation"]) == {"fake-solver", "fake-solver (control)"}
    assert {h["name"] for h in meta["headline"]} >= {"accuracy fake-solver", "accuracy fake-solver (control)"}
    write_all("autobench", av.TABLES)
    ev = (results/"tables"/"autobench_eval.csv").read_text()
    assert "control.jsonl: the human-written control questions" in ev and "benchmark.jsonl of this run" in ev
    cap = (results/"tables"/"autobench_main.md").read_text()
    assert "thresholds: on_disagree=flag, uniq_threshold=0.9, support_share=0.3, hard_below=0.333, easy_above=0.667" in cap
    assert "support_share=0.3" in " ".join(meta["provenance"]["protocol"]["notes"])


def test_support_share_is_the_answerability_threshold():
    paper = _paper()
    q = dict(type="short", question="Which?", answer_text="gate scores keys", evidence=["S9.P9"])
    other = [i for i in sp.paragraphs(paper) if "gate" in sp.paragraphs(paper)[i]][:1]
    ok, _ = ab.supports(q, other, paper)
    target = ab.content_words(q["answer_text"])
    share = len(target & ab.content_words(sp.paragraphs(paper)[other[0]])) / len(target)
    assert 0 < share < 1
    assert ab.supports(q, other, paper, share_min=share)[0] is True and ab.supports(q, other, paper, share_min=share + 0.01)[0] is False
    assert ok is (share >= ab.SUPPORT_SHARE)


def test_committed_sample_run_fills_every_table_and_figure():
    """Issue 21: the committed default run is complete and keeps questions, so that the tables carry its discrimination,
    diversity and evaluation (on the kept and on the human-written control questions)."""
    import pandas as pd
    root = Path(__file__).resolve().parent.parent
    runs = sorted((root/"results"/"autobench"/"sample"/"local").glob("2*"))
    if not runs: pytest.skip("no committed autobench run")
    meta, label = read_json(runs[-1]/"meta.json"), f"sample/local/{runs[-1].name}"
    assert meta["status"] == "complete" and meta["config"]["control_set"] and meta["config"]["evaluate_models"]
    tab = {n: pd.read_csv(root/"results"/"tables"/f"autobench_{n}.csv", dtype=str).fillna("")
           for n in ("main", "stages", "ablation", "eval")}
    assert all(len(t[t["run"] == label]) for t in tab.values())
    comb = tab["main"][(tab["main"]["run"] == label) & (tab["main"]["area"] == "Combined")].iloc[0]
    assert int(comb["post-filtering"]) >= 2 and comb["diversity"] != "–" and comb["discrimination"] != "–"
    assert ad.CONTROL in set(tab["ablation"][tab["ablation"]["run"] == label]["configuration"])
    ev = tab["eval"][(tab["eval"]["run"] == label) & (tab["eval"]["subset"] == "overall")]
    assert {"benchmark.jsonl of this run", "control.jsonl: the human-written control questions"} == set(ev["questions of"])
    assert "thresholds: on_disagree=" in (root/"results"/"tables"/"autobench_main.md").read_text()
