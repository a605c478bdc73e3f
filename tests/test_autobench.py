"""AutoBench: ingestion, windows, each filter stage on crafted questions, metrics, the pipeline on the
fake server (failures recorded, cache replay, tables) and, marked slow, end to end with the real model."""
import csv, io, json
from pathlib import Path
import numpy as np
import pytest

from scibench import autobench as ab
from scibench.core import DataError, read_jsonl
from scibench.llm import LLM, ModelSpec

SAMPLE = Path(__file__).resolve().parent.parent/"data"/"samples"/"autobench"


# --- ingestion -------------------------------------------------------------------------------------
def test_markdown(tmp_path):
    p = tmp_path/"x.md"
    p.write_text("# Title Here\n\nintro text before any heading\n\n## A\n\npara one\nline two\n\n| h | i |\n|---|---|\n| 1 | 2 |\n\n### B\n\nlast.\n")
    paper = ab.load_paper(p, field="NLP")
    assert paper["title"] == "Title Here" and paper["paper_id"] == "x" and paper["field"] == "NLP"
    assert [s["title"] for s in paper["sections"]] == ["Preamble", "A", "B"]
    paras = ab.paragraphs(paper)
    assert paras["S2.P1"] == "para one line two" and paras["S2.P2"] == "| h | i |\n|---|---|\n| 1 | 2 |"
    assert list(paras) == ["S1.P1", "S2.P1", "S2.P2", "S3.P1"]


def test_plain_text_headings():
    paper = ab.load_paper(SAMPLE/"papers"/"stomata_light.txt", "stomata")
    assert paper["title"].startswith("Blue Light Controls")
    assert [s["title"] for s in paper["sections"]] == ["Abstract", "1 Introduction", "2 Methods", "3 Results", "4 Discussion"]
    # a sentence ending with a period is never a heading, even when short and capitalized
    t = ab.parse_text("T\n\n1 Intro\n\nShort Line Here.\n\nmore\n", "t")
    assert [s["title"] for s in t["sections"]] == ["1 Intro"] and len(t["sections"][0]["paragraphs"]) == 2


def test_s2orc_json_and_jsonl(tmp_path):
    paper = ab.load_paper(SAMPLE/"papers"/"dust_galaxies.json")
    assert paper["paper_id"] == "synthetic-dust-z2"
    assert [s["title"] for s in paper["sections"]] == ["Abstract", "Introduction", "Data and Methods", "Results", "Conclusions"]
    assert [len(s["paragraphs"]) for s in paper["sections"]] == [1, 2, 2, 2, 1]
    p = tmp_path/"many.jsonl"
    p.write_text(json.dumps({"paper_id": "a", "abstract": "Abs.", "body_text": [{"section": "I", "text": "x"}]}) + "\n" +
                 json.dumps({"paper_id": "b", "body_text": [{"section": "I"}]}) + "\n")
    with pytest.raises(DataError, match=r"many.jsonl:2: field 'body_text\[0\].text'"): ab.load_paper(p, "a")
    p.write_text(json.dumps({"paper_id": "a", "abstract": "Abs.", "body_text": [{"section": "I", "text": "x"}]}) + "\n" +
                 json.dumps({"paper_id": "b", "body_text": [{"section": "I", "text": "y"}]}) + "\n")
    assert ab.paragraphs(ab.load_paper(p, "b")) == {"S1.P1": "y"}
    with pytest.raises(DataError, match="holds 2 papers"): ab.load_paper(p)
    q = tmp_path/"bad.jsonl"; q.write_text('{"paper_id": "a"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:1: field 'body_text': missing"): ab.load_paper(q)
    (tmp_path/"x.pdf").write_text("x")
    with pytest.raises(DataError, match="unknown paper format"): ab.load_paper(tmp_path/"x.pdf")


def test_ids_are_stable():
    a = ab.load_paper(SAMPLE/"papers"/"gated_attention.md", "sga")
    b = ab.load_paper(SAMPLE/"papers"/"gated_attention.md", "sga")
    assert a == b and "S4.P2" in ab.paragraphs(a) and ab.paragraphs(a)["S4.P2"].startswith("| Model |")


def test_manifest_errors(tmp_path):
    (tmp_path/"papers.jsonl").write_text('{"paper_id": "a", "path": "nope.md", "field": "NLP"}\n')
    with pytest.raises(DataError, match=r"papers.jsonl:1: field 'path'"): ab.load_manifest(tmp_path/"papers.jsonl")
    (tmp_path/"nope.md").write_text("# t\n\n## s\n\np\n")
    (tmp_path/"papers.jsonl").write_text('{"paper_id": "a", "path": "nope.md", "field": "NLP"}\n{"paper_id": "b", "path": "x.md"}\n')
    with pytest.raises(DataError, match=r"papers.jsonl:2: field 'field': missing"): ab.load_manifest(tmp_path/"papers.jsonl")


def test_sample_split():
    papers, related = ab.load_split("sample")
    assert len(papers) >= 3 and len({p["field"] for p in papers}) == 3 and len(related) >= 1
    assert {Path(r["path"]).suffix for r in ab.load_manifest(SAMPLE/"papers.jsonl")} == {".md", ".txt", ".json"}


# --- windows ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,size,stride", [(1, 3, 2), (3, 3, 2), (4, 3, 2), (7, 3, 2), (10, 4, 1), (9, 3, 3)])
def test_window_overlap(n, size, stride):
    sec = dict(id="S1", paragraphs=[dict(id=f"S1.P{j}", text="") for j in range(1, n + 1)])
    ws = ab.windows(sec, size, stride)
    assert sorted({i for w in ws for i in w}, key=lambda s: int(s.split("P")[1])) == [f"S1.P{j}" for j in range(1, n + 1)]
    assert all(len(w) == min(size, n) for w in ws)
    for a, b in zip(ws, ws[1:]):
        assert len(set(a) & set(b)) >= size - stride                     # consecutive windows share size - stride paragraphs
    with pytest.raises(ValueError): ab.windows(sec, 2, 3)


# --- retrieval and generation helpers -------------------------------------------------------------
def test_retrieval_context_sources():
    papers, related = ab.load_split("sample")
    r = ab.Retriever(papers, related)
    kp = dict(paper_id="synthetic-dust-z2", statement="The Balmer decrement without dust is 2.86", paragraphs=["S3.P1"])
    ctx = r.context(kp, k_same=2, k_related=1)
    assert [c["source"] for c in ctx] == ["source", "same paper", "same paper", "related paper"]
    assert ctx[-1]["paper_id"] == "balmer-notes"                          # the related note about the Balmer decrement
    assert all(c["id"] != "S3.P1" for c in ctx[1:3])


def test_contrastive_distractors():
    assert ab.numeric_distractors("A_V = 1.4 magnitudes") == ["A_V = 1.1 magnitudes", "A_V = 1.7 magnitudes", "A_V = 1.0 magnitudes"]
    opts, key = ab.make_options("q", "91.2%", ["88.7%"])
    assert opts["ABCD".index(key)] == "91.2%" and "88.7%" in opts and len(opts) == 4


# --- filter stages on crafted questions ----------------------------------------------------------
def _paper():
    return ab.load_paper(SAMPLE/"papers"/"gated_attention.md", "sga-long-docs", "NLP")


def _mcq(qid="q", question="How many keys does each SGA query attend to?", answer="A", opts=("64", "32", "128", "all")):
    ev = "S3.P1"
    return dict(qid=qid, paper_id="sga-long-docs", type="mcq", level="factual", question=question, options=list(opts), answer=answer,
                answer_text=opts["ABCD".index(answer)], evidence=[ev], evidence_text=f"[{ev}] " + ab.paragraphs(_paper())[ev],
                generation_failure=None)


def _llm(fs): return LLM(ModelSpec("fake", fs.base_url, "fake", max_retries=0, timeout=10), progress=False)


def test_correctness_stage(fake_server):
    fs = fake_server(reply=lambda b: json.dumps({"rationale": "r", "answer": "B"}))
    qs = [_mcq("right", answer="B", opts=("32", "64", "128", "all")), _mcq("wrong", answer="A")]
    c = ab.check_correctness(_llm(fs), qs, {"sga-long-docs": _paper()})
    assert [x["passed"] for x in c] == [True, False] and "key 'A'" in c[1]["reason"]
    checks = dict(correctness=c, answerability=[dict(passed=True, verified=True)]*2, ambiguity=[dict(passed=True, verified=True)]*2)
    assert ab.apply_filters(qs, checks, ("correctness",))[0] == [True, False]
    mask, counts, fate = ab.apply_filters(qs, checks, ("correctness",), on_disagree="flag")
    assert mask == [True, True] and fate[1]["flags"] and counts[1]["passed"] == 2


def test_correctness_unverified_is_counted(fake_server):
    fs = fake_server(reply=lambda b: "I think it is the second one")
    qs = [_mcq("q")]
    c = ab.check_correctness(_llm(fs), qs, {"sga-long-docs": _paper()})
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
    c = ab.check_answerability(_llm(fs), qs, {"sga-long-docs": _paper()})
    assert [x["passed"] for x in c] == [True, False, False]
    assert "no existing paragraph" in c[1]["reason"] and "0%" in c[2]["reason"]


def test_ambiguity_stage(fake_server):
    fs = fake_server(reply=lambda b: json.dumps({"correct_options": ["A", "C"] if "two correct" in b["messages"][-1]["content"] else ["A"]}))
    qs = [_mcq("one"), _mcq("two", question="Which are true (two correct)?"), dict(_mcq("tf"), type="tf", options=None, answer="true")]
    c = ab.check_ambiguity(_llm(fs), qs)
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
    assert m["levels"] == {"factual": 2} and m["difficulty"] == {"medium": 1, "unknown": 1}


def test_human_review_roundtrip(tmp_path):
    text = ab.review_csv([dict(qid="q0", kept=True, question="Q?", answer="A", options=["x", "y"]), dict(qid="q1", kept=False)])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["qid"] for r in rows] == ["q0"] and set(ab.REVIEW_COLUMNS) == set(rows[0])
    p = tmp_path/"review_reviewed.csv"
    def write(vals):
        with p.open("w", newline="") as f:
            w = csv.DictWriter(f, ab.REVIEW_COLUMNS); w.writeheader()
            for i, v in enumerate(vals): w.writerow({**rows[0], "qid": f"q{i}", "reviewer_correct": v})
    write(["yes", "no", "", "YES"])
    m, lo, hi, n = ab.human_correctness(p)
    assert (m, n) == (pytest.approx(2/3), 3)                    # blank rows are not reviewed, not counted
    write(["maybe"])
    with pytest.raises(DataError, match=r"review_reviewed.csv:2: field 'reviewer_correct'"): ab.human_correctness(p)
    assert ab.human_correctness(tmp_path/"none.csv") is None


# --- the pipeline on the fake server --------------------------------------------------------------
@pytest.fixture
def fake_models(fake_server, tmp_path, monkeypatch):
    fs = fake_server(reply=ab.scripted_reply, permanent="The cry1 mutant, which lacks")   # one window of the biology paper always fails
    monkeypatch.setenv("SCIBENCH_MODELS", str(ab.fake_registry(fs.base_url, tmp_path/"models.toml")))
    monkeypatch.setenv("SCIBENCH_RESULTS", str(tmp_path/"results"))
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path/"figures"))
    return fs


KW = dict(judge="fake-judge", solver="fake-solver", solvers="fake-solver,fake-solver+evidence", points_per_paper=3, n_resamples=100)


def test_pipeline_fake(fake_models, tmp_path):
    s = ab.run("fake-gen", "sample", **KW)
    d = tmp_path/"results"/"autobench"/"sample"/"fake-gen"
    ext = read_jsonl(d/"extraction.jsonl")
    failed = [r for r in ext if r["failure"]]
    assert len(failed) >= 1 and all("http 400" in r["failure"] for r in failed)      # recorded with its reason
    assert s["extraction"]["failed"] == len(failed) and s["extraction"]["windows"] == len(ext)
    recs = read_jsonl(d/"records.jsonl")
    full = [r for r in recs if r["variant"] == "full"]
    assert len(full) == s["main"]["generated"] == s["stages"][0]["entered"]
    assert sum(r["kept"] for r in recs) == s["main"]["kept"] == len(read_jsonl(d/"benchmark.jsonl"))
    for st in s["stages"][1:]:                                                       # the funnel is consistent
        assert st["entered"] - st["passed"] == st["dropped_check"] + st["dropped_unverified"]
    assert {r["dropped_at"] for r in full if not r["kept"]} <= {"generation", *ab.STAGES}
    assert set(s["ablation"]) == {*ab.ABLATIONS, "w/o Retrieval Augmentation", "Factual-level only"}
    assert s["ablation"]["w/o Correctness Verification"]["kept"] >= s["ablation"]["Full MDQF"]["kept"]
    assert all(r["difficulty"] in ("easy", "medium", "hard", "unknown") for r in recs)
    meta = json.loads((d/"meta.json").read_text())
    assert meta["status"] == "complete" and meta["params"]["solver_is_generator"] is False
    # evaluation of a model on the generated benchmark
    e = ab.evaluate("fake-solver", "sample", "fake-gen", "fake-judge", context="evidence")
    assert e["overall"]["total"] == s["main"]["kept"] and e["overall"]["n"] + e["overall"]["failures"] == e["overall"]["total"]
    # tables from results/ only, deterministic
    calls = fake_models.calls
    paths = ab.make_tables()
    first = {p: Path(p).read_bytes() for p in paths if str(p).endswith(".md")}
    ab.make_tables()
    assert fake_models.calls == calls and all(Path(p).read_bytes() == b for p, b in first.items())
    main = (tmp_path/"results"/"tables"/"autobench_main.csv").read_text()
    assert "paper" in main and "91.3" in main and "Combined" in main
    abl = (tmp_path/"results"/"tables"/"autobench_ablation.csv").read_text()
    assert "0.78" in abl and "w/o Uniqueness Check" in abl
    assert "fake-solver" in (tmp_path/"results"/"tables"/"autobench_eval.csv").read_text()
    # a rerun is served from the cache: only the failed requests are sent again
    failed_requests = meta["usage"]["total"]["failures"]
    assert failed_requests >= 1
    ab.run("fake-gen", "sample", out=tmp_path/"again", **KW)
    assert fake_models.calls - calls == failed_requests


def test_generation_failures_are_records(fake_server, tmp_path, monkeypatch):
    def reply(b):
        p = b["messages"][-1]["content"]
        return "not json at all" if p.startswith("Write an exam question") else ab.scripted_reply(b)
    fs = fake_server(reply=reply)
    monkeypatch.setenv("SCIBENCH_MODELS", str(ab.fake_registry(fs.base_url, tmp_path/"models.toml")))
    s = ab.run("fake-gen", "sample", out=tmp_path/"r", limit=1, ablate_retrieval=False, **{**KW, "points_per_paper": 2})
    recs = read_jsonl(tmp_path/"r"/"records.jsonl")
    assert len(recs) == 2 and all(r["generation_failure"] == "no JSON object in response" for r in recs)
    assert s["main"]["kept"] == 0 and s["stages"][0]["dropped_unverified"] == 2 and s["generation"]["full"]["failures"] == 2


def test_load_benchmark_errors(tmp_path):
    p = tmp_path/"b.jsonl"
    row = dict(qid="q", paper_id="p", level="factual", type="mcq", question="?", answer="C", answer_text="x", evidence=[], evidence_text="",
               options=["x", "y"])
    p.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"b.jsonl:1: field 'answer'"): ab.load_benchmark(p)
    p.write_text(json.dumps({k: v for k, v in row.items() if k != "evidence"}) + "\n")
    with pytest.raises(DataError, match=r"b.jsonl:1: field 'evidence': missing"): ab.load_benchmark(p)


def test_cli_ingest(capsys):
    ab.cli(["ingest", str(SAMPLE/"papers"/"dust_galaxies.json")])
    out = capsys.readouterr().out
    assert "synthetic-dust-z2" in out and "S3.P2" in out


def test_downloader_offline(monkeypatch, tmp_path):
    from scibench import data
    def boom(url, dest, timeout=60): raise data.OfflineError(f"cannot reach {url}")
    monkeypatch.setattr(data, "fetch_url", boom)
    with pytest.raises(data.OfflineError, match="export.arxiv.org"): ab.download_arxiv(tmp_path)


def test_downloader_parses_arxiv_atom(monkeypatch, tmp_path):
    from scibench import data
    atom = """<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/1706.03762v7</id>
    <title>Attention Is All
     You Need</title><summary>The dominant models are recurrent. We propose the Transformer. It is fast. It works well.</summary></entry></feed>"""
    def fake(url, dest, timeout=60): Path(dest).write_text(atom); return Path(dest)
    monkeypatch.setattr(data, "fetch_url", fake)
    ab.download_arxiv(tmp_path, {"1706.03762": "NLP"})
    man = ab.load_manifest(tmp_path/"papers.jsonl")
    paper = ab.load_paper(tmp_path/man[0]["path"], man[0]["paper_id"], man[0]["field"])
    assert paper["title"] == "Attention Is All You Need" and len(ab.paragraphs(paper)) == 2


# --- end to end with the real embedded model -------------------------------------------------------
@pytest.mark.slow
def test_end_to_end_local(local_server, tmp_path):
    s = ab.run("local", "sample", judge="local", out=tmp_path/"run", limit=1, points_per_paper=2, points_per_window=2,
               max_windows=2, extract_max_tokens=200, generate_max_tokens=180, check_max_tokens=80, ablate_retrieval=False,
               n_resamples=100)
    recs = read_jsonl(tmp_path/"run"/"records.jsonl")
    ext = read_jsonl(tmp_path/"run"/"extraction.jsonl")
    assert len(ext) == 2 and all((r["failure"] is None) or isinstance(r["failure"], str) for r in ext)
    assert s["main"]["generated"] == len(recs) == s["extraction"]["selected"]
    for r in recs:                                      # every question is either a failure with a reason or fully checked
        if r["generation_failure"] is None:
            assert all(r["checks"][k]["reason"] for k in ("correctness", "answerability", "ambiguity"))
    meta = json.loads((tmp_path/"run"/"meta.json").read_text())
    assert meta["status"] == "complete" and meta["usage"]["total"]["calls"] > 0
