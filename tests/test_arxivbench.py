"ArxivBench: extraction, ids, index, judging, scores, tables, CLI; one slow end-to-end run with the real model."
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scibench.cli import run_command

from scibench.benchmarks.arxivbench import method as ab

from scibench.benchmarks.arxivbench import index as ai

from bench import arxivbench as pab
from scibench.core import DataError, read_json, read_jsonl
from scibench.tables import write_all

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------- extraction
MESSY = [
    # the requested format
    ("[[Attention Is All You Need]] [[https://arxiv.org/abs/1706.03762]]\n"
     "[[BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding]] [[https://arxiv.org/abs/1810.04805]]\n"
     "[[Deep Residual Learning for Image Recognition]] [[https://arxiv.org/abs/1512.03385]]",
     ["1706.03762", "1810.04805", "1512.03385"]),
    # single brackets, versions, pdf links with and without .pdf
    ("1. [Attention Is All You Need] [https://arxiv.org/pdf/1706.03762v5.pdf]\n2. [Adam] [http://arxiv.org/pdf/1412.6980v9]\n"
     "3. [GANs] [https://arxiv.org/abs/1406.2661v1]", ["1706.03762", "1412.6980", "1406.2661"]),
    # parentheses
    ("- (Auto-Encoding Variational Bayes) (https://arxiv.org/abs/1312.6114)\n- (Playing Atari) (https://www.arxiv.org/abs/1312.5602v1)",
     ["1312.6114", "1312.5602"]),
    # markdown links, numbered
    ("Here are three papers:\n1. [Chain-of-Thought Prompting](https://arxiv.org/abs/2201.11903)\n"
     "2. [GPT-4 Technical Report](https://arxiv.org/abs/2303.08774v6).\n3. [PPO](http://export.arxiv.org/abs/1707.06347).",
     ["2201.11903", "2303.08774", "1707.06347"]),
    # bare URLs without scheme, trailing punctuation
    ("See arxiv.org/abs/1801.01203, arxiv.org/abs/1801.01207; and https://arxiv.org/abs/1607.00133.", ["1801.01203", "1801.01207", "1607.00133"]),
    # arXiv:ID mentions, old style with and without subject class
    ("* Maldacena, The Large N Limit (arXiv:hep-th/9711200v3)\n* Perelman (arXiv: math/0211159)\n* Something (arXiv:math.AG/0601001)",
     ["hep-th/9711200", "math/0211159", "math/0601001"]),
    # old-style URLs
    ("1) Shor - https://arxiv.org/abs/quant-ph/9508027v2\n2) Riess - http://arxiv.org/pdf/astro-ph/9805201.pdf\n"
     "3) https://arxiv.org/abs/cond-mat.dis-nn/9910332", ["quant-ph/9508027", "astro-ph/9805201", "cond-mat/9910332"]),
    # title on one line, URL on the next, with labels and bold
    ("**Title:** Graph Isomorphism in Quasipolynomial Time\n**URL:** https://arxiv.org/abs/1512.03547\n\n"
     "**Title:** Julia: A Fresh Approach to Numerical Computing\n**URL:** https://arxiv.org/abs/1411.1607", ["1512.03547", "1411.1607"]),
    # 4+4 and 4+5 digit ids, duplicates counted once
    ("[[A]] [[https://arxiv.org/abs/0704.0001]] [[B]] [[https://arxiv.org/abs/2101.00001]] [[A again]] [[https://arxiv.org/abs/0704.0001v2]]",
     ["0704.0001", "2101.00001"]),
    # not arXiv references
    ("Papers: doi:10.1000/182, https://openreview.net/forum?id=abc, version 1706.03762 of nothing.", []),
    ("I'm sorry, but I cannot provide you with a list of research articles.", []),
    # markdown link whose text is the URL itself, nested in [[ ]]
    ("- Title: Adam\n  Link: [https://arxiv.org/abs/1412.6980](https://arxiv.org/abs/1412.6980)\n[[GANs](https://arxiv.org/abs/1406.2661)]",
     ["1412.6980", "1406.2661"]),
    # "arXiv preprint arXiv:ID", uppercase host, ids at line ends with punctuation
    ("Vaswani et al. (2017). Attention is all you need. arXiv preprint arXiv:1706.03762.\nHTTPS://ARXIV.ORG/ABS/2106.09685!", ["1706.03762", "2106.09685"]),
]

@pytest.mark.parametrize("text,ids", MESSY)
def test_extract_ids(text, ids):
    assert [p.arxiv_id for p in ab.extract_papers(text)] == ids

def test_extract_titles_and_access():
    ps = ab.extract_papers(MESSY[0][0])
    assert ps[1].title == "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"
    assert ps[0]["url"] == "https://arxiv.org/abs/1706.03762" and ps[0]["arxiv_id"] == ps[0].arxiv_id
    assert [p.title for p in ab.extract_papers(MESSY[3][0])] == ["Chain-of-Thought Prompting", "GPT-4 Technical Report", "PPO"]
    assert [p.title for p in ab.extract_papers(MESSY[7][0])] == ["Graph Isomorphism in Quasipolynomial Time",
                                                                 "Julia: A Fresh Approach to Numerical Computing"]
    assert ab.extract_papers("https://arxiv.org/abs/1412.6980 - Adam: A Method for Stochastic Optimization")[0].title == \
        "Adam: A Method for Stochastic Optimization"
    assert ab.extract_papers("1. Attention Is All You Need: https://arxiv.org/abs/1706.03762")[0].title == "Attention Is All You Need"
    assert ab.extract_papers("1. Vaswani et al. (2017). Attention is all you need. arXiv preprint arXiv:1706.03762.")[0].title == \
        "Attention is all you need"
    assert [p.title for p in ab.extract_papers('1. **Attention Is All You Need** - https://arxiv.org/abs/1706.03762\n'
                                               '2. **BERT** (https://arxiv.org/abs/1810.04805)\n3. "Deep Residual Learning" arXiv:1512.03385')] == \
        ["Attention Is All You Need", "BERT", "Deep Residual Learning"]

@pytest.mark.parametrize("text,status", [
    (MESSY[0][0], "ok"), (MESSY[4][0], "ok"), (MESSY[3][0], "ok"), (MESSY[7][0], "too_few"),
    (MESSY[0][0] + "\n[[X]] [[https://arxiv.org/abs/2101.00009]]", "too_many"),
    ("I'm sorry, but I cannot provide you with a list of research articles. Is there anything else I can help you with?", "refusal"),
    ("Here are some great topics in topology: knots, braids and manifolds.", "no_papers"),
    ("[[The History of Mathematics: A Very Short Introduction]] [https://arxiv.org/abs/0712.2705] is not correct, I found a different one: "
     "[[A History of Mathematics: A Very Short Introduction]] " * 5, "repetition"),
])
def test_classify(text, status):
    assert ab.classify(text, ab.extract_papers(text), "length" if status == "repetition" else "stop") == status

def test_normalize_id_forms():
    for s in ("1706.03762", "1706.03762v7", "arXiv:1706.03762", "https://arxiv.org/abs/1706.03762v2", "http://www.arxiv.org/pdf/1706.03762.pdf",
              "export.arxiv.org/abs/1706.03762"):
        assert ai.normalize_id(s) == "1706.03762", s
    assert ai.normalize_id("math.AG/0601001v1") == "math/0601001"
    assert ai.normalize_id("https://arxiv.org/abs/hep-th/9901001") == "hep-th/9901001"
    assert ai.normalize_id("not an id") is None

# --------------------------------------------------------------------------- index
@pytest.fixture
def snapshot(tmp_path):
    p = pab._write_fake_snapshot(tmp_path/"snap.json", 500)
    recs = [json.loads(l) for l in p.read_text().splitlines()]
    return p, recs

def test_index_hits_misses_versions(snapshot, tmp_path):
    p, recs = snapshot
    st = ai.build_index(p, tmp_path/"ix.sqlite")
    assert st.records == 500 and st.skipped == 0
    ix = ai.open_index(tmp_path/"ix.sqlite")
    new = next(r for r in recs if "/" not in r["id"]); old = next(r for r in recs if "/" in r["id"])
    assert ix.get(new["id"])["title"] == new["title"]
    assert ix.get(f"https://arxiv.org/pdf/{new['id']}v3.pdf")["id"] == new["id"]
    assert ix.get(f"arXiv:{old['id']}v2")["id"] == old["id"]
    assert set(ix.get(new["id"])) >= {"id", "title", "abstract", "categories"}
    assert ix.get("9912.99999") is None and ix.get("garbage") is None
    assert [r["id"] for r in ix.find_title(new["title"].upper())] == [new["id"]]
    assert len(ix) == 500

def test_index_old_style_with_subject_class_and_gz(tmp_path):
    lines = [json.dumps(dict(id="math/0601001", title="Some  algebraic\n geometry", abstract="a", categories="math.AG")),
             json.dumps(dict(id="hep-th/9901001", title="Strings", abstract="b", categories="hep-th"))]
    with gzip.open(tmp_path/"s.json.gz", "wt") as f: f.write("\n".join(lines) + "\n")
    ai.build_index(tmp_path/"s.json.gz", tmp_path/"ix.sqlite")
    ix = ai.open_index(tmp_path/"ix.sqlite")
    assert ix.get("math.AG/0601001")["title"] == "Some algebraic geometry"
    assert ix.get("hep-th/9901001v1")["categories"] == "hep-th"
    assert ix.find_title("Some algebraic geometry")[0]["id"] == "math/0601001"

def test_index_malformed_lines(snapshot, tmp_path):
    p, _ = snapshot
    lines = p.read_text().splitlines()
    lines.insert(10, '{"id": "2101.00001", "title": "broken"'); lines.insert(20, json.dumps(dict(id=1234.5, title="t")))
    bad = tmp_path/"bad.json"; bad.write_text("\n".join(lines) + "\n")
    st = ai.build_index(bad, tmp_path/"ix.sqlite")                     # default: skip, report, continue
    assert st.records == 500 and st.skipped == 2
    assert [(e["line"], e["field"]) for e in st.errors] == [(11, "<json>"), (21, "id")]
    assert ai.open_index(tmp_path/"ix.sqlite").stats["skipped"] == 2
    with pytest.raises(DataError, match=r"bad\.json:11: field '<json>'"):
        ai.build_index(bad, tmp_path/"ix2.sqlite", on_error="raise")  # strict: stop, write nothing
    assert not (tmp_path/"ix2.sqlite").exists()

def test_index_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="make data"): ai.build_index(tmp_path/"nope.json", tmp_path/"ix.sqlite")

def test_cli_index_and_lookup(snapshot, tmp_path, capsys):
    p, recs = snapshot
    assert run_command("arxivbench", ab.COMMANDS, ["index", str(p), "--out", str(tmp_path/"ix.sqlite")]) == 0
    assert run_command("arxivbench", ab.COMMANDS, ["lookup", "--index", str(tmp_path/"ix.sqlite"), recs[3]["id"], "2999.00001"]) == 0
    out = [json.loads(l) for l in capsys.readouterr().out.splitlines() if l.startswith("{")]
    assert out[0]["result"]["id"] == recs[3]["id"] and out[1]["result"] is None

def subjects_of(categories) -> list[str]:
    "The subjects of a record's categories, as `ab.SUBJECTS` maps codes ('x.' / 'x-': prefixes)."
    return [s for s, (_, codes) in ab.SUBJECTS.items()
            if any(c.startswith(k) if k.endswith((".", "-")) else c == k for c in categories.split() for k in codes)]

def test_sample_snapshot_covers_sample_subjects():
    covered = {s for r in read_jsonl(ab.snapshot_path("sample"), ["id", "title"]) for s in subjects_of(r["categories"])}
    assert {r["subject"] for r in ab.load_prompts("sample")} <= covered

def test_load_prompts_bad_subject(tmp_path):
    p = tmp_path/"p.jsonl"; p.write_text('{"id": "a", "subject": "Math", "prompt": "x"}\n{"id": "b", "subject": "Alchemy", "prompt": "y"}\n')
    with pytest.raises(DataError, match=r"p\.jsonl:2: field 'subject'"): ab.load_prompts(path=p)
    p.write_text('{"id": "a", "subject": "Math"}\n')
    with pytest.raises(DataError, match="prompt"): ab.load_prompts(path=p)

# --------------------------------------------------------------------------- judging and scores (fake server)
ANSWER = ("1. [[Attention Is All You Need]] [[https://arxiv.org/abs/1706.03762v5]]\n"
          "2. [[Deep Residual Learning for Image Recognition]] [[https://arxiv.org/abs/1810.04805]]\n"
          "3. [[A Made Up Survey of Things]] [[https://arxiv.org/abs/1905.67890]]")

def _reply(judge_relevance='{"rationale": "ok", "answer": "yes"}', judge_match='{"rationale": "ok", "answer": "pass"}', answer=ANSWER):
    def f(body):
        u = body["messages"][-1]["content"]
        if u.startswith("A researcher asked"): return judge_relevance
        if u.startswith("An AI assistant cited"): return judge_match
        return answer(u) if callable(answer) else answer
    return f

def _run(run_bench, fs, model="fake", judge="fj", judge_fs=None, **params):
    "A whole run through `execute`: `model` and `judge` are ad-hoc endpoints on fake servers → (meta, run folder, scores, records)."
    endpoints = {model: {"base_url": fs.base_url}, judge: {"base_url": (judge_fs or fs).base_url}}
    params.setdefault("protocol", "paper")   # these tests are about the two-step judge (protocol authors: test_arxivbench_authors.py)
    meta, d = run_bench("arxivbench", dict(model=model, judge=judge, **params), endpoints=endpoints)
    return meta, d, read_json(d/"scores.json")["subjects"], read_jsonl(d/"records.jsonl")

def test_run_fake_two_step_judge(fake_server, run_bench):
    fs = fake_server(reply=_reply())
    meta, _, s, recs = _run(run_bench, fs, limit=1, subjects="Math,Physics")
    assert meta["status"] == "complete" and meta["n"] == 2 and meta["failures"] == 0
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    assert [(r["id"], r["failure"]) for r in recs] == [("math-000", None), ("phys-000", None)]
    p = recs[0]["papers"]
    assert [x["verdict"] for x in p] == ["pass", "pass", "no"]
    assert [x["taxonomy"] for x in p] == ["correct", "real_paper_wrong_id", "invented_paper"]
    assert p[2]["relevant"] is None and p[2]["verdict_source"].startswith("fabricated")
    # pass is excluded from the denominator: 0 yes / 1 judged (the fabricated id)
    assert (s["Math"]["yes"], s["Math"]["no"], s["Math"]["passed"], s["Math"]["accuracy"]) == (0, 1, 2, 0.0)
    # 2 queries + relevance for the 2 papers found in the snapshot per prompt (none for the fabricated one)
    # + title match for the same 2 papers (identical prompts across the two answers are sent once)
    assert fs.calls == 2 + 2 * 2 + 2
    head = {h["name"]: h for h in meta["headline"]}
    acc = head[f"accuracy {ab.ACCURACIES['accuracy']} (%)"]    # headline names now say which accuracy (issue 10, item 8)
    assert acc["value"] == 0.0 and acc["n"] == 2
    fab = next(h for n, h in head.items() if n.startswith("fabricated-id rate (%), snapshot "))   # the name carries the snapshot date
    assert fab["n"] == 6 and head["invalid-response rate (%)"]["value"] == 0.0

def test_every_record_has_id_and_failure_and_no_paths(fake_server, run_bench):
    fs = fake_server(reply=_reply(judge_relevance="I really cannot say."), permanent="Ricci flow")
    meta, d, _, recs = _run(run_bench, fs, limit=1, subjects="Math,Physics,Statistics")
    assert all(isinstance(r["id"], str) and "failure" in r for r in recs)
    fails = {r["id"]: r["failure"] for r in recs}
    assert fails["math-000"].startswith("query: http 400")                          # the request failed
    assert fails["phys-000"].startswith("judge: relevance: ")                     # the judge's answer did not parse
    assert meta["n"] == 3 and meta["failures"] == 3 and meta["status"] == "failed"
    assert any(k.startswith("query: ") for k in meta["failures_by_reason"])
    text = (d/"meta.json").read_text() + (d/"scores.json").read_text() + (d/"records.jsonl").read_text()
    for bad in (str(ROOT), "/tmp", str(Path.home()), ".sqlite"):
        assert bad not in text, bad                                                  # no absolute, temporary or index paths
    assert read_json(d/"scores.json")["index"]["index"] == "sample index built from data/samples/arxivbench/snapshot.jsonl"

def test_scores_json_is_strict(fake_server, run_bench):
    fs = fake_server(reply=_reply(answer="I'm sorry, I cannot help with that."))
    meta, d, s, _ = _run(run_bench, fs, limit=1, subjects="Math")
    def no_constants(c): raise AssertionError(f"{c} in scores.json")
    json.loads((d/"scores.json").read_text(), parse_constant=no_constants)
    json.loads((d/"meta.json").read_text(), parse_constant=no_constants)
    assert s["Math"]["accuracy"] is None and s["Math"]["accuracy_lo"] is None   # nothing judged: null, not NaN
    assert {h["name"]: h for h in meta["headline"]}[f"accuracy {ab.ACCURACIES['accuracy']} (%)"]["value"] is None

def test_run_fake_irrelevant_skips_step2_and_failures_recorded(fake_server, run_bench):
    fs = fake_server(reply=_reply(judge_relevance='{"rationale": "off topic", "answer": "no"}'))
    _, _, s, _ = _run(run_bench, fs, limit=1, subjects="Math")
    assert s["Math"]["accuracy"] == 0.0 and s["Math"]["no"] == 3 and fs.calls == 1 + 2
    fs2 = fake_server(reply=_reply(judge_relevance="I really cannot say.", answer="I'm sorry, I cannot help with that."))
    meta, _, s, recs = _run(run_bench, fs2, model="fake2", judge="fj2", limit=1, subjects="Math")
    assert s["Math"]["statuses"]["refusal"] == 1 and s["Math"]["refusal_rate"] == 100.0 and s["Math"]["strict_accuracy"] == 0.0
    assert recs[0]["failure"] is None and meta["status"] == "complete"             # a refusal is an answer, not a failure
    fs3 = fake_server(reply=_reply(judge_relevance="I really cannot say."))
    meta, _, s, recs = _run(run_bench, fs3, model="fake3", judge="fj3", limit=1, subjects="Math")
    assert s["Math"]["judge_failures"] == 2 and s["Math"]["no"] == 1 and s["Math"]["accuracy"] == 0.0
    assert [p["verdict"] for p in recs[0]["papers"]] == [None, None, "no"]
    assert "relevance: no choice found" in recs[0]["papers"][0]["verdict_failure"]
    assert recs[0]["failure"].startswith("judge: relevance: no choice found")

def test_run_fake_correct_and_request_failure(fake_server, run_bench):
    fs = fake_server(reply=_reply(judge_match='{"rationale": "same", "answer": "yes"}'), permanent="Ricci flow")
    meta, _, s, recs = _run(run_bench, fs, limit=1, subjects="Math,Computer Science")
    recs = {r["subject"]: r for r in recs}
    assert recs["Math"]["status"] == "request_failed" and recs["Math"]["request_failure"]
    assert s["Computer Science"]["accuracy"] == pytest.approx(200 / 3) and s["Computer Science"]["strict_accuracy"] == pytest.approx(200 / 3)
    # a failed request is a failure, not an invalid answer: counted, and left out of every rate
    assert s["Math"]["request_failures"] == 1 and s["Math"]["invalid_rate"] is None and s["Math"]["papers_listed"] == 0
    assert s["all"]["invalid_rate"] == 0.0 and s["all"]["strict_accuracy"] == pytest.approx(200 / 3)
    assert meta["status"] == "partial" and meta["failures"] == 1                    # 1 of 2 prompts failed
    inv = {h["name"]: h for h in meta["headline"]}["invalid-response rate (%)"]
    assert (inv["n"], inv["failures"]) == (1, 1)

def test_adhoc_judge_endpoint_is_used(fake_server, run_bench):
    "The judge given only as an ad-hoc endpoint (`--judge-base-url`) gets every judge call, the model none."
    model_fs = fake_server(reply=lambda body: ANSWER)
    judge_fs = fake_server(reply=_reply(judge_match='{"rationale": "same", "answer": "yes"}'))
    meta, _, s, _ = _run(run_bench, model_fs, judge="myjudge", judge_fs=judge_fs, limit=1, subjects="Math")
    assert model_fs.calls == 1 and judge_fs.calls == 2 + 2
    assert meta["roles"]["judge"] == ["myjudge"] and meta["models"]["myjudge"]["base_url"] == judge_fs.base_url
    assert s["Math"]["yes"] == 2 and s["Math"]["judge_failures"] == 0

def test_dry_run_plan_calls_nothing(fake_server, run_bench, results):
    fs = fake_server(reply=_reply())
    meta, d = run_bench("arxivbench", dict(model="fake", judge="fj", limit=1, subjects="Math,Physics", max_tokens=100, judge_max_tokens=50,
                                                  protocol="paper"),
                        endpoints={"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}}, dry_run=True)
    assert meta["status"] == "dry-run" and d is None
    rows = {r["role"]: r for r in meta["plan"]}
    assert (rows["model"]["calls"], rows["model"]["completion_tokens"]) == (2, 200)
    assert (rows["judge"]["calls"], rows["judge"]["completion_tokens"]) == (2 * 3 * 2, 12 * 50)   # an estimate: every listed link is judged now
    assert fs.calls == 0 and fs.headers_seen == []                                  # not even a preflight GET
    assert not list(results.rglob("meta.json"))

@pytest.mark.parametrize("protocol", ["authors", "paper"])
def test_derived_plan_is_the_calls_of_a_run_against_the_stub(fake_server, run_bench, protocol):
    "On the sample split, the derived plan's calls per role are those a run against `FakeServer(reply=stub_reply)` makes."
    from scibench.bench import get_benchmark
    from scibench.llm import get_model
    from scibench.run import derive_plan
    b = get_benchmark("arxivbench")
    fs = fake_server(reply=b.stub_reply)
    params = dict(model="fake", judge="fake", protocol=protocol)
    plan = derive_plan(b, b.make_config(params), {"fake": get_model("fake", base_url=fs.base_url)})
    meta, _ = run_bench("arxivbench", params, endpoints={"fake": {"base_url": fs.base_url}})
    assert meta["status"] == "complete" and meta["failures"] == 0
    assert {r["role"]: r["calls"] for r in plan} == {k: meta["usage"][k]["requests"] for k in ("model", "judge")}
    n = len(ab.load_prompts("sample"))
    assert {r["role"]: r["calls"] for r in plan} == {"model": n, "judge": (3 if protocol == "authors" else 6) * n}

def test_missing_real_split_says_what_to_run(run_bench, tmp_path, monkeypatch):
    from scibench.bench import ConfigError
    monkeypatch.setenv("SCIBENCH_DATA", str(tmp_path/"data"))
    with pytest.raises(ConfigError, match=r"arxivbench generate --split full.*make data"):
        run_bench("arxivbench", dict(split="full", model="x", judge="x"), endpoints={"x": {"base_url": "http://127.0.0.1:9/v1"}})
    (tmp_path/"data"/"arxivbench").mkdir(parents=True)
    (tmp_path/"data"/"arxivbench"/"full.jsonl").write_text('{"id": "a", "subject": "Math", "prompt": "x"}\n')
    with pytest.raises(ConfigError, match=r"needs data/arxivbench/index\.sqlite|needs .*index\.sqlite.*make data"):
        run_bench("arxivbench", dict(split="full", model="x", judge="x"), endpoints={"x": {"base_url": "http://127.0.0.1:9/v1"}})

def test_config_validation():
    from scibench.bench import ConfigError, get_benchmark
    b = get_benchmark("arxivbench")
    assert b.make_config({"subjects": "Math, Physics"}).subjects == ["Math", "Physics"]
    with pytest.raises(ConfigError, match="Alchemy"): b.make_config({"subjects": "Alchemy"})
    with pytest.raises(ConfigError, match="judge_base_url"): b.make_config({"judge_base_url": "http://x"})
    ps = {p.name: p for p in b.params()}
    assert "every subject" in ps["limit"].doc and ps["judge"].role and ps["index"].default == ""

def test_score_records_known_answers():
    def mk(verdicts, status="ok"):
        return dict(subject="Statistics", status=status, papers=[dict(verdict=v, verdict_failure=None, in_snapshot=v != "no",
                                                                       taxonomy="correct") for v in verdicts])
    s = ab.score_records([mk(["yes", "yes", "no"]), mk(["no", "pass", "pass"]), mk([], "no_papers")])["Statistics"]
    assert s["accuracy"] == pytest.approx(50.0) and s["strict_accuracy"] == pytest.approx(200 / 9)
    assert s["invalid_rate"] == pytest.approx(100 / 3) and s["fabricated_rate"] == pytest.approx(100 * 2 / 6)
    assert s["accuracy_lo"] <= 50 <= s["accuracy_hi"]

def test_generate_prompts_dedup(fake_server):
    from scibench.llm import LLM, ModelSpec
    batches = iter(["[[Papers on topology with arXiv links?]] [[papers on topology with arxiv links?]]",
                    "[[Papers on knot theory with arXiv links?]]"])
    fs = fake_server(reply=lambda b: next(batches, "nothing"))
    ps, st = ab.generate_prompts(LLM(ModelSpec("fake", fs.base_url, "fake"), cache=False, progress=False), "Math", n=3, batch=2,
                                 max_calls=4)
    assert [p["prompt"] for p in ps] == ["Papers on topology with arXiv links?", "Papers on knot theory with arXiv links?"]
    assert st["exact_duplicates"] == 1 and st["shortfall"] == 1 and st["calls"] == 4

def test_subjects_mapping():
    assert set(ab.MAIN_SUBJECTS) == {"Math", "Computer Science", "Quantitative Biology", "Physics", "Quantitative Finance", "Statistics",
                                     "Electrical Engineering and Systems Science", "Economics"}
    assert subjects_of("math-ph") == ["Physics"] and subjects_of("nucl-th") == ["Physics"]
    assert subjects_of("cs.OS") == ["Computer Science", "Operating Systems"]

# --------------------------------------------------------------------------- tables
def test_make_tables_from_results(fake_server, run_bench, results, tmp_path, monkeypatch):
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path/"figures"))
    fs = fake_server(reply=_reply(judge_match='{"rationale": "same", "answer": "yes"}'))
    _, d1, _, _ = _run(run_bench, fs, model="fake-360m", limit=1)
    _run(run_bench, fs, model="fake-1.7b", limit=1, max_tokens=300)
    paths = write_all("arxivbench", ab.TABLES)
    t1 = (results/"tables"/"arxivbench_table1.csv").read_text()
    assert "fake-360m" in t1 and "Claude-3.5-sonnet" in t1 and "39.93" in t1 and "judge failures 0" in t1
    assert f"sample/fake-360m/{d1.name}" in t1 and "max_tokens=300" in t1                # run and settings columns
    t2 = (results/"tables"/"arxivbench_table2.csv").read_text()
    assert "Operating Systems" in t2 and "66.67 (n=3)" in t2                          # under 10 judged papers: no CI
    md = (results/"tables"/"arxivbench_table1.md").read_text()
    assert "synthetic sample" in md                                                   # caption via run.caption
    det = (results/"tables"/"arxivbench_details.csv").read_text()
    assert "66.7 [66.7, 66.7] (n=39)" in det                                          # all 13 subjects: 39 judged papers
    assert (tmp_path/"figures"/"arxivbench_subjects.png").exists() and (tmp_path/"figures"/"arxivbench_model_size.png").exists()
    before = {p: Path(p).read_bytes() for p in paths if str(p).endswith(".md")}
    write_all("arxivbench", ab.TABLES)
    assert all(Path(p).read_bytes() == b for p, b in before.items())   # deterministic

# --------------------------------------------------------------------------- lookup on a fresh clone
@pytest.fixture
def fresh_clone_data(own_data):
    "A data dir with only the shipped samples (no `make data`)."
    return own_data("arxivbench")

def test_lookup_without_real_index(fresh_clone_data, tmp_path, capsys):
    assert run_command("arxivbench", ab.COMMANDS, ["lookup", "1706.03762", "2999.00001"]) == 0
    out, err = capsys.readouterr()
    res = [json.loads(l)["result"] for l in out.splitlines()]
    assert res[0]["title"] == "Attention Is All You Need" and res[1] is None
    assert "sample index" in err and "make data" in err
    assert list((tmp_path/"cache"/"arxivbench").glob("sample-*.sqlite"))               # built on demand into the cache
    assert run_command("arxivbench", ab.COMMANDS, ["lookup", "--title", "Attention Is All You Need"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[0])["result"][0]["id"] == "1706.03762" and "sample index" in err

def test_lookup_console_script_fresh_clone(fresh_clone_data, tmp_path):
    env = {**os.environ, "SCIBENCH_DATA": str(fresh_clone_data), "SCIBENCH_CACHE": str(tmp_path/"cache2")}
    r = subprocess.run([sys.executable, "-m", "scibench.cli", "arxivbench", "lookup", "1706.03762"], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["result"]["id"] == "1706.03762" and "sample index" in r.stderr

# --------------------------------------------------------------------------- real model (slow)
@pytest.fixture(scope="module")
def real_model():
    """The shared embedded server. It answers `GET /models` slowly while it works through other clients' queue, so wait
    up to a minute before concluding it is down (the shared `local_server` fixture's 2 s check then starts a second
    server, which exits because the port is taken)."""
    from scibench.llm import get_model
    from scibench.server import served_models, serving
    spec = get_model("local")
    if served_models(spec, timeout=60)[0] is not None:
        yield spec
    else:
        with serving("local"): yield spec

@pytest.mark.slow
def test_end_to_end_real_model(real_model, run_bench):
    meta, d = run_bench("arxivbench", dict(model="local", split="sample", limit=1, judge="local", max_tokens=160, judge_max_tokens=200,
                                          protocol="paper"), serve=False)
    recs = read_jsonl(d/"records.jsonl")
    assert len(recs) == 13 and {r["subject"] for r in recs} == set(ab.SUBJECTS)
    for r in recs:
        assert isinstance(r["id"], str) and "failure" in r
        assert r["status"] in ab.STATUSES and (r["response"] is not None or r["request_failure"])
        for p in r["papers"]:
            assert p["taxonomy"] in ab.TAXONOMY
            assert p["verdict"] in ("yes", "no", "pass") or p["verdict_failure"]
    a = read_json(d/"scores.json")["subjects"]["all"]
    assert a["prompts"] == 13 and a["yes"] + a["no"] + a["passed"] + a["judge_failures"] == a["papers_listed"]
    assert meta["status"] in ("complete", "partial") and (d/"meta.json").exists()

@pytest.mark.slow
def test_real_judge_two_steps(real_model, tmp_path):
    "The embedded model as judge on papers that are in the snapshot: every verdict is yes/no/pass or a recorded failure."
    from scibench.llm import LLM
    items = [dict(prompt="Can you list influential arXiv papers on transformer architectures, with links?",
                  papers=[p.to_dict() for p in ab.extract_papers(ANSWER)])]
    with ai.open_index(ab.index_for("sample")) as ix:
        ab.verify_and_judge(LLM("local", progress=False), items, ix, judge_max_tokens=200)
    ps = items[0]["papers"]
    assert [p["in_snapshot"] for p in ps] == [True, True, False]
    assert [p["taxonomy"] for p in ps] == ["correct", "real_paper_wrong_id", "invented_paper"]
    for p in ps[:2]:
        assert p["relevant"] in ("yes", "no") or p["relevance_failure"]
        assert p["verdict"] in ("yes", "no", "pass") or p["verdict_failure"]
    assert ps[2]["verdict"] == "no" and ps[2]["relevant"] is None

# --------------------------------------------------------------------------- validate-judge: bad inputs (issue 20)
_LABELS_OK = b'{"prompt": "Papers on attention?", "title": "Attention Is All You Need", "url": "https://arxiv.org/abs/1706.03762", "label": "yes"}\n'

def _validate_error(capsys, *argv) -> str:
    "Exit status 2 and one line on stderr naming the file: that line."
    assert run_command("arxivbench", ab.COMMANDS, ["validate-judge", *map(str, argv), "--judge", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("scibench arxivbench: error: "), err
    return err[0]

@pytest.mark.parametrize("data, where", [
    (b"", "l.jsonl: no records"),
    (b'{"prompt": "caf\xe9", "url": "https://arxiv.org/abs/1706.03762", "label": "yes"}\n', "l.jsonl:1: not UTF-8"),
    (_LABELS_OK + b'{"prompt": "unclosed\n', "l.jsonl:2: "),
    (b'{"title": "t", "url": "https://arxiv.org/abs/1706.03762", "label": "yes"}\n', "l.jsonl:1: field 'prompt'"),
])
def test_validate_judge_bad_labels_exits_2(tmp_path, capsys, data, where):
    (tmp_path/"l.jsonl").write_bytes(data)
    assert where in _validate_error(capsys, tmp_path/"l.jsonl")

@pytest.mark.parametrize("index", [os.urandom(4096), b""])
def test_validate_judge_garbage_index_exits_2(tmp_path, capsys, index):
    (tmp_path/"l.jsonl").write_bytes(_LABELS_OK)
    (tmp_path/"ix.sqlite").write_bytes(index)
    err = _validate_error(capsys, tmp_path/"l.jsonl", "--index", tmp_path/"ix.sqlite")
    assert f"{tmp_path/'ix.sqlite'}: not an arXiv index" in err
