"""Bad input (issue 9, point 9) and written files (point 10): every loader meets a matrix of bad files and must raise
`DataError` naming the file, the line and the field, before anything is written; the arXiv index build skips and counts
bad lines; everything the project writes is written atomically with mode 0644."""
import gzip, json, os, stat
from pathlib import Path
import pytest
from scibench.cli import run_command
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data
from scibench.benchmarks.arxivbench import method as arxivbench
from scibench.benchmarks.arxivbench import index as arxiv_index
from scibench.benchmarks.autobench import data as autobench_data
from scibench.benchmarks.autobench import papers
from scibench.benchmarks.rubrics import method as rubrics
from scibench.benchmarks.rubrics import paperbench
from scibench.core import DataError, read_jsonl, read_json_records, read_json, write_json, write_jsonl, write_text, write_bytes, write_with

ROOT = Path(__file__).resolve().parent.parent
BAD = b"caf\xe9"          # Latin-1 "café": not UTF-8
TALLY = {"tried": 0, "clear": 0}


# --------------------------------------------------------------------------- the JSON-lines loaders
def _abgen_rec(i):
    return {"example_id": f"ex-{i}", "research_background": "Background, café.", "method": "Method.",
            "main_experiment": {"experiment_setup": "Setup.", "results": "Results."},
            "ablation_study": {"module_name": "M", "research_objective": "O.", "experiment_setup": "S.", "results": "R."}}

def _prompt_rec(i): return {"id": f"math-{i:03d}", "subject": "Math", "prompt": f"Papers about café number {i}?"}

def _control_rec(i):
    return {"qid": f"q{i}", "paper_id": "p", "level": "factual", "type": "mcq", "question": "Which café is it?",
            "options": ["a", "b", "c", "d"], "answer": "A", "evidence": ["S1.P1"]}

def _load_control(p):
    return autobench_data.load_control_set(p, {"p": papers.make_paper("p", "T", [("S", ["A paragraph."])])})

def _manifest_rec(i): return {"paper_id": f"p{i}", "path": "paper.md", "field": "NLP, café"}

def _s2orc_rec(i): return {"paper_id": f"p{i}", "title": "Café", "body_text": [{"section": "Intro", "text": f"Text {i}."}]}

def _load_manifest(p):
    (p.parent/"paper.md").write_text("# T\n\n## S\n\nA paragraph.\n")
    return papers.load_manifest(p)

def _load_s2orc(p): return papers.load_paper(p, "p1")

# name, file name, good record, loader, id field, (field to drop), (field, wrong value[, field reported])
JSONL = {
    "abgen": ("sample.jsonl", _abgen_rec, lambda p: abgen.load_abgen(path=p), "example_id", "main_experiment.results",
              [("main_experiment", "a string, not an object"), ("method", {"x": 1}), ("example_id", [1])]),
    "arxivbench prompts": ("prompts.jsonl", _prompt_rec, lambda p: arxivbench.load_prompts(path=p), "id", "prompt",
                           [("prompt", 42), ("id", None)]),
    "autobench manifest": ("papers.jsonl", _manifest_rec, _load_manifest, "paper_id", "field", [("path", 3)]),
    "autobench control set": ("control.jsonl", _control_rec, _load_control, "qid", "question",
                              [("evidence", "S1.P1"), ("options", "a, b")]),
    "autobench s2orc": ("papers.jsonl", _s2orc_rec, _load_s2orc, "paper_id", "body_text", [("body_text", "text"), ("title", 7)]),
}

def _layout(recs):
    "Records on lines 1, 3, 4 (line 2 blank): a reported line must be the file's line, not the record's index."
    lines = [json.dumps(recs[0], ensure_ascii=False), "", *[json.dumps(r, ensure_ascii=False) for r in recs[1:]]]
    return lines

def _cases(make, id_field, drop, wrong):
    "(case name, bytes, expected line, expected field, expected column or None, text the message must contain)."
    recs = [make(i) for i in (1, 2, 3)]
    out = [("empty", b"", None, None, None, "no records"), ("blank lines only", b"\n   \n\t\n", None, None, None, "no records")]
    lines = _layout(recs)
    bad = lines[:]; col = bad[2].index("\u00e9") + 1; bad[2] = bad[2].replace("\u00e9", "\x00", 1)
    raw = "\n".join(bad).encode().replace(b"\x00", b"\xe9") + b"\n"    # a Latin-1 é in line 3
    out.append(("not UTF-8", raw, 3, None, col, "not UTF-8"))
    broken = lines[:]; broken[2] = broken[2][:-1] + ', "x": }'       # Expecting value at the last character
    out.append(("bad JSON mid-file", ("\n".join(broken) + "\n").encode(), 3, None, len(broken[2]), "invalid JSON"))
    r = json.loads(lines[3]); cur = r; parts = drop.split(".")
    for k in parts[:-1]: cur = cur[k]
    del cur[parts[-1]]
    miss = lines[:]; miss[3] = json.dumps(r)
    out.append((f"missing {drop}", ("\n".join(miss) + "\n").encode(), 4, drop, None, "missing"))
    for field, value in wrong:
        r = json.loads(lines[2]); r[field] = value
        w = lines[:]; w[2] = json.dumps(r)
        out.append((f"wrong type {field}", ("\n".join(w) + "\n").encode(), 3, field, None, "expected"))
    r = json.loads(lines[3]); r[id_field] = recs[0][id_field]
    dup = lines[:]; dup[3] = json.dumps(r)
    out.append((f"duplicate {id_field}", ("\n".join(dup) + "\n").encode(), 4, id_field, None, "duplicate"))
    out.append(("not a JSON object", ("\n".join(lines[:3] + ["[1, 2]"]) + "\n").encode(), 4, None, None, "expected a JSON object"))
    return out

MATRIX = [(name, *case) for name, (fname, make, load, idf, drop, wrong) in JSONL.items() for case in _cases(make, idf, drop, wrong)]


def _check(e: DataError, path, line, field, col, text):
    msg = str(e)
    ok = str(path) in msg and e.line == line and e.field == field and text in msg and (col is None or e.col == col)
    if line is not None: ok = ok and f"{path}:{line}:" in msg
    if field is not None: ok = ok and f"field '{field}'" in msg
    return ok


@pytest.mark.parametrize("name,case,data,line,field,col,text", MATRIX, ids=[f"{m[0]}: {m[1]}" for m in MATRIX])
def test_jsonl_loaders(tmp_path, name, case, data, line, field, col, text):
    fname, make, load, *_ = JSONL[name]
    p = tmp_path/fname; p.write_bytes(data)
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: load(p)
    assert _check(e.value, p, line, field, col, text), str(e.value)
    TALLY["clear"] += 1


def test_good_files_still_load(tmp_path):
    for name, (fname, make, load, *_) in JSONL.items():
        p = tmp_path/name.replace(" ", "_")/fname; p.parent.mkdir()
        p.write_text("\n".join(_layout([make(i) for i in (1, 2, 3)])) + "\n")
        assert load(p), name


# --------------------------------------------------------------------------- AbGen human evaluation (a JSON array)
def _human_rec(i, system="a"):
    return {**_abgen_rec(i), "meta_id": f"ex-{i}@{system}", "model_response": "Design.",
            **{c: {"score": 4} for c in abgen_data.HUMAN_CRITERIA}}

def _array(recs): return "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in recs) + "\n]\n"   # record k on line k + 1

def _edit(k, f):
    "The array with record k (0-based, on line k + 2) passed through f (str → str)."
    def make(rs):
        lines = _array(rs).split("\n"); lines[k + 1] = f(lines[k + 1]); return "\n".join(lines).encode()
    return make

HUMAN = [
    ("empty", lambda rs: b"", None, None, "no records"),
    ("empty array", lambda rs: b"[]\n", None, None, "no records"),
    ("not UTF-8", lambda rs: _edit(1, lambda l: l.replace("\u00e9", "\x00"))(rs).replace(b"\x00", b"\xe9"), 3, None, "not UTF-8"),
    ("bad JSON", _edit(1, lambda l: l.replace('"Design."', "Design.")), 3, None, "invalid JSON"),
    ("missing comma", _edit(0, lambda l: l.rstrip(",")), 3, None, "expected ','"),
    ("trailing data", lambda rs: (_array(rs) + "x\n").encode(), 6, None, "extra data"),
    ("score is a string", lambda rs: _array([rs[0], {**rs[1], "soundness": {"score": "high"}}, rs[2]]).encode(), 3, "soundness.score", "expected a number"),
    ("criterion is a number", lambda rs: _array([rs[0], {**rs[1], "importance": 4}, rs[2]]).encode(), 3, "importance", "expected an object"),
    ("meta_id without @", lambda rs: _array([rs[0], {**rs[1], "meta_id": "ex-2"}, rs[2]]).encode(), 3, "meta_id", "<example_id>@<system>"),
    ("duplicate meta_id", lambda rs: _array([rs[0], rs[1], {**rs[2], "meta_id": rs[0]["meta_id"]}]).encode(), 4, "meta_id", "duplicate"),
    ("missing score", lambda rs: _array([rs[0], rs[1], {**rs[2], "faithfulness": {}}]).encode(), 4, "faithfulness.score", "missing"),
]

@pytest.mark.parametrize("case,make,line,field,text", HUMAN, ids=[h[0] for h in HUMAN])
def test_human_eval(tmp_path, case, make, line, field, text):
    p = tmp_path/"human_evaluation.json"; p.write_bytes(make([_human_rec(1), _human_rec(2), _human_rec(3)]))
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: abgen_data.load_human_eval(p)
    assert _check(e.value, p, line, field, None, text), str(e.value)
    TALLY["clear"] += 1

def test_human_eval_good_and_column(tmp_path):
    p = tmp_path/"h.json"; p.write_text(_array([_human_rec(1), _human_rec(2)]))
    assert len(abgen_data.load_human_eval(p)) == 2
    p.write_text('[\n  {"meta_id": "a@b",\n   "x": tru}\n]')
    with pytest.raises(DataError) as e: read_json_records(p)
    assert (e.value.line, e.value.col) == (3, 9)    # the column within line 3, not an offset in the file


# --------------------------------------------------------------------------- rubric trees
def node(nid, w=1, subs=(), **kw): return {"id": nid, "requirements": f"do {nid} café", "weight": w, "sub_tasks": list(subs), **kw}

def _tree_text(t): return json.dumps(t, indent=1, ensure_ascii=False) + "\n"

def _line_of(text, nid): return next(i for i, l in enumerate(text.splitlines(), 1) if f'"id": "{nid}"' in l) - 1   # its "{"

def _tree(w=1): return node("r", 1, [node("a", 2), node("b", w), node("c", 1)])

TREES = [
    ("string weight", _tree(w="3"), "b", "root.sub_tasks[1].weight", "weight must be a number"),
    ("true weight", _tree(w=True), "b", "root.sub_tasks[1].weight", "weight must be a number"),
    ("negative weight", _tree(w=-1), "b", "root.sub_tasks[1].weight", "weight must be a number"),
    ("null weight", _tree(w=None), "b", "root.sub_tasks[1].weight", "weight must be a number"),
    ("sub_tasks an object", node("r", 1, [node("a"), {**node("b"), "sub_tasks": {"id": "x"}}]), "b", "root.sub_tasks[1].sub_tasks", "expected a list"),
    ("requirements a list", node("r", 1, [node("a"), {**node("b"), "requirements": ["x"]}]), "b", "root.sub_tasks[1].requirements", "expected text"),
    ("missing weight", node("r", 1, [node("a"), {k: v for k, v in node("b").items() if k != "weight"}]), "b", "root.sub_tasks[1].weight", "missing"),
    ("children weights 0", node("r", 1, [node("a", 0), node("b", 0)]), "r", "root.sub_tasks", "sum to 0"),
    ("a child is a string", node("r", 1, [node("a"), "b"]), "r", "root.sub_tasks[1]", "not an object"),
]

@pytest.mark.parametrize("case,tree,at,field,text", TREES, ids=[t[0] for t in TREES])
def test_rubric_tree(tmp_path, case, tree, at, field, text):
    p = tmp_path/"rubric.json"; s = _tree_text(tree); p.write_text(s)
    line = _line_of(s, at)
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: paperbench.load_paperbench_rubric(p)
    assert _check(e.value, p, line, field, None, text), str(e.value)
    TALLY["clear"] += 1

def _raw_bad_byte():
    t = _tree_text(_tree()); line = next(i for i, l in enumerate(t.splitlines(), 1) if "\u00e9" in l)
    return t.replace("\u00e9", "\x00", 1).encode().replace(b"\x00", b"\xe9"), line, None

def _raw_bad_json():
    lines = _tree_text(_tree()).splitlines(); k = next(i for i, l in enumerate(lines) if '"weight": 2' in l)
    lines[k] = lines[k].replace('"weight": 2', '"weight": 2,,'); return "\n".join(lines).encode(), k + 1, lines[k].index(",,") + 2

def test_rubric_tree_repeated_ids_are_fine(tmp_path):
    "Real PaperBench trees (bbox, bridging-data-gaps) repeat a leaf id under different parents; nothing is keyed by it."
    p = tmp_path/"rubric.json"; p.write_text(_tree_text(node("r", 1, [node("a", 1, [node("x")]), node("b", 1, [node("x")])])))
    assert [l["id"] for l in paperbench.load_paperbench_rubric(p)] == ["x", "x"]

RAW_TREES = [
    ("empty", lambda: (b"", None, None), "empty file"),
    ("blank lines only", lambda: (b"\n \n", None, None), "empty file"),
    ("not UTF-8", _raw_bad_byte, "not UTF-8"),
    ("bad JSON", _raw_bad_json, "invalid JSON"),
    ("not an object", lambda: (b"[1, 2]\n", 1, None), "node is not an object"),
]

@pytest.mark.parametrize("case,make,text", RAW_TREES, ids=[t[0] for t in RAW_TREES])
def test_rubric_tree_file(tmp_path, case, make, text):
    data, line, col = make()
    p = tmp_path/"rubric.json"; p.write_bytes(data)
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: paperbench.load_paperbench_rubric(p)
    assert _check(e.value, p, line, e.value.field, col, text), str(e.value)
    TALLY["clear"] += 1

def test_rubric_leaf_scores(tmp_path):
    d = tmp_path/"je"/"x"; (d/"submission").mkdir(parents=True)
    s = _tree_text(node("r", 1, [node("a", 1, score=1), node("b", 1, score="yes")], score=0.5)); (d/"expected_result.json").write_text(s)
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: paperbench.judge_eval_cases(tmp_path/"je")[0]
    assert _check(e.value, d/"expected_result.json", _line_of(s, "b"), "root.sub_tasks[1].score", None, "leaf score must be 0 or 1")
    TALLY["clear"] += 1


def _rubric_split(tmp_path, papers_json=None, paper_md=b"# T\n\nText.\n"):
    root = tmp_path/"split"; d = root/"papers"/"x"; d.mkdir(parents=True)
    (d/"rubric.json").write_text(_tree_text(node("r", 1, [node("a", 1, task_category="Code Development")])))
    (d/"paper.md").write_bytes(paper_md)
    if papers_json is not None: (root/"papers.json").write_text(papers_json)
    return root

PAPERS = [
    ("papers.json duplicate id", dict(papers_json='[\n{"id": "x", "title": "A"},\n{"id": "x", "title": "B"}\n]'), "papers.json", 3, "id", "duplicate"),
    ("papers.json title a number", dict(papers_json='[\n{"id": "x", "title": 5}\n]'), "papers.json", 2, "title", "expected a string"),
    ("papers.json no id", dict(papers_json='[\n{"title": "A"}\n]'), "papers.json", 2, "id", "missing"),
    ("paper.md empty", dict(paper_md=b"\n\n"), "paper.md", None, None, "empty file"),
    ("paper.md not UTF-8", dict(paper_md=b"# T\n\nText " + BAD + b".\n"), "paper.md", 3, None, "not UTF-8"),
]

@pytest.mark.parametrize("case,kw,fname,line,field,text", PAPERS, ids=[p[0] for p in PAPERS])
def test_rubric_papers(tmp_path, case, kw, fname, line, field, text):
    root = _rubric_split(tmp_path, **kw)
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: rubrics.load_papers(root=root)
    assert fname in str(e.value) and _check(e.value, e.value.path, line, field, None, text), str(e.value)
    TALLY["clear"] += 1


# --------------------------------------------------------------------------- AutoBench paper files
PAPER_FILES = [
    ("md empty", "p.md", b"", None, None, "empty file"),
    ("md blank", "p.md", b"\n  \n", None, None, "empty file"),
    ("md only headings", "p.md", b"# Title\n\n## Intro\n\n## Methods\n", None, None, "no paragraph"),
    ("md not UTF-8", "p.md", b"# Title\n\n## Intro\n\nSome " + BAD + b" text.\n", 5, None, "not UTF-8"),
    ("txt not UTF-8", "p.txt", b"Title\n\nAbstract\n\n" + BAD + b"\n", 5, None, "not UTF-8"),
    ("json empty", "p.json", b"", None, None, "empty file"),
    ("json empty array", "p.json", b"[]", None, None, "no records"),
    ("json bad", "p.json", b'{"paper_id": "p",\n "body_text": [}\n', 2, None, "invalid JSON"),
    ("json body_text a string", "p.json", b'{"paper_id": "p",\n "body_text": "text"}\n', 1, "body_text", "expected a list"),
    ("json paragraph text a number", "p.json", b'{"paper_id": "p", "body_text": [\n {"section": "I", "text": "x"},\n {"section": "I", "text": 3}]}\n',
     3, "body_text[1].text", "not a string"),
    ("json duplicate paper_id", "p.json", b'[\n{"paper_id": "p", "body_text": [{"text": "x"}]},\n{"paper_id": "p", "body_text": [{"text": "y"}]}\n]',
     3, "paper_id", "duplicate"),
    ("json no text", "p.json", b'{"paper_id": "p", "body_text": []}', 1, "body_text", "no paragraph"),
]

@pytest.mark.parametrize("case,fname,data,line,field,text", PAPER_FILES, ids=[p[0] for p in PAPER_FILES])
def test_paper_files(tmp_path, case, fname, data, line, field, text):
    p = tmp_path/fname; p.write_bytes(data)
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: papers.load_paper(p, "p")
    assert _check(e.value, p, line, field, None, text), str(e.value)
    TALLY["clear"] += 1


# --------------------------------------------------------------------------- the arXiv index build
def _snap_lines(n=20):
    return [json.dumps({"id": f"2101.{i:05d}", "title": f"Paper number {i} on café", "abstract": "x", "categories": "cs.LG"},
                       ensure_ascii=False) for i in range(1, n + 1)]

@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_index_skips_and_counts_bad_lines(tmp_path, gz):
    lines = [l.encode() for l in _snap_lines()]
    lines[4] = lines[4].replace("caf\u00e9".encode(), BAD)              # line 5: a byte that is not UTF-8
    lines[9] = lines[9][:-5]                                            # line 10: bad JSON
    lines[14] = json.dumps({"title": "no id"}).encode()                 # line 15: no id
    data = b"\n".join(lines) + b"\n"
    snap = tmp_path/("snap.json.gz" if gz else "snap.json")
    snap.write_bytes(gzip.compress(data) if gz else data)
    st = arxiv_index.build_index(snap, tmp_path/"ix.sqlite")
    assert (st.records, st.skipped, st.lines) == (17, 3, 20)
    assert [(e["line"], e["field"]) for e in st.errors] == [(5, None), (10, "<json>"), (15, "id")]
    assert "not UTF-8" in st.errors[0]["msg"] and f"{snap}:5" in st.errors[0]["msg"]
    with arxiv_index.open_index(tmp_path/"ix.sqlite") as ix:
        assert len(ix) == 17 and ix.stats["skipped"] == 3 and ix.get("2101.00004") and ix.get("2101.00005") is None
    with pytest.raises(DataError, match=r"snap\.json(\.gz)?:5: not UTF-8"):
        arxiv_index.build_index(snap, tmp_path/"ix2.sqlite", on_error="raise")
    assert not (tmp_path/"ix2.sqlite").exists()

def test_index_truncated_gzip_is_an_error(tmp_path):
    snap = tmp_path/"snap.json.gz"; snap.write_bytes(gzip.compress(("\n".join(_snap_lines(2000)) + "\n").encode())[:-200])
    TALLY["tried"] += 1
    with pytest.raises(DataError, match="corrupt or truncated"): arxiv_index.build_index(snap, tmp_path/"ix.sqlite")
    assert not (tmp_path/"ix.sqlite").exists()
    TALLY["clear"] += 1

def test_index_cli_reports_skipped(tmp_path, capsys):
    lines = _snap_lines(5); lines[2] = "{nope"
    snap = tmp_path/"s.json"; snap.write_text("\n".join(lines) + "\n")
    assert run_command("arxivbench", arxivbench.COMMANDS, ["index", str(snap), "--out", str(tmp_path/"ix.sqlite")]) == 0
    assert "skipped 1 malformed line(s)" in capsys.readouterr().out


# --------------------------------------------------------------------------- core readers
def test_core_reader_columns_and_lines(tmp_path):
    p = tmp_path/"a.jsonl"
    p.write_text('{"a": 1}\n\n\t{"a": "é", "b": tru}\n')
    with pytest.raises(DataError) as e: read_jsonl(p)
    assert (e.value.line, e.value.col) == (3, 18) and "column 18" in str(e.value)
    p.write_text('\ufeff{"a": 1}\r\n{"a": 2}\r\n')                  # a BOM and CRLF line ends are fine
    assert read_jsonl(p) == [{"a": 1}, {"a": 2}]
    assert read_jsonl(p, numbered=True) == [(1, {"a": 1}), (2, {"a": 2})]
    p.write_text("")
    assert read_jsonl(p, allow_empty=True) == []
    with pytest.raises(DataError, match=r"a\.jsonl: no records"): read_jsonl(p)
    q = tmp_path/"x.json"; q.write_bytes(b'{"a":\n  "caf\xe9"}')
    with pytest.raises(DataError) as e: read_json(q)
    assert (e.value.line, e.value.col) == (2, 7)
    q.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(DataError, match="nested too deeply"): read_json(q)


# --------------------------------------------------------------------------- written files
def _modes(d):
    return {str(f.relative_to(d)): oct(stat.S_IMODE(f.stat().st_mode)) for f in Path(d).rglob("*") if f.is_file()}

def test_writers_are_atomic_and_0644(tmp_path):
    old = os.umask(0o077)                                               # even under a strict umask
    try:
        write_json(tmp_path/"a.json", {"x": 1}); write_jsonl(tmp_path/"b.jsonl", [{"x": 1}])
        write_text(tmp_path/"c.csv", "a,b\n"); write_bytes(tmp_path/"d.bin", b"\x00")
        import matplotlib; matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from scibench.report import save_figure, save_table
        import pandas as pd
        save_figure(plt.figure(), "fig", outdir=tmp_path/"figs")
        save_table(pd.DataFrame({"a": [1]}), "t", outdir=tmp_path/"tables")
    finally: os.umask(old)
    modes = _modes(tmp_path)
    assert len(modes) == 8 and set(modes.values()) == {"0o644"}, modes
    assert not [f for f in tmp_path.rglob("*.tmp")]
    # a writer that fails half way leaves the old file whole and no temporary file
    class Boom(Exception): pass
    def half(f): f.write(b'{"x": 2}\n{"x"'); raise Boom
    with pytest.raises(Boom): write_with(tmp_path/"b.jsonl", half)
    assert read_jsonl(tmp_path/"b.jsonl") == [{"x": 1}] and not [f for f in tmp_path.rglob("*.tmp")]


# --------------------------------------------------------------------------- whole runs
@pytest.fixture
def abgen_env(tmp_path, monkeypatch, fake_server):
    fs = fake_server()
    reg = tmp_path/"models.toml"
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake-model"\nmax_retries = 0\ntimeout = 5\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    data = tmp_path/"data"; (data/"samples"/"abgen").mkdir(parents=True)
    f = data/"samples"/"abgen"/"sample.jsonl"
    f.write_bytes((ROOT/"data/samples/abgen/sample.jsonl").read_bytes())
    monkeypatch.setenv("SCIBENCH_DATA", str(data))
    return fs, f

def test_run_files_are_0644(abgen_env, run_bench):
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=2, max_tokens=16), notebook=True)
    modes = _modes(d)
    assert {"meta.json", "records.jsonl", "scores.json", "run.ipynb"} <= set(modes) and set(modes.values()) == {"0o644"}, modes
    assert oct(stat.S_IMODE((Path(d).parent/"latest").stat().st_mode)) == "0o644"

def test_abgen_eval_meta_eval_csv_is_0644(tmp_path, monkeypatch, fake_server, run_bench):
    fs = fake_server()
    reg = tmp_path/"models.toml"
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake-model"\nmax_retries = 0\ntimeout = 5\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    from functools import partial
    from scibench.benchmarks.abgen import meta_eval as abgen_eval   # the file modes are the point, not the CIs: 20 bootstrap resamples, not 1000
    monkeypatch.setattr(abgen_eval, "meta_evaluate", partial(abgen_eval.meta_evaluate, n_resamples=20))
    meta, d = run_bench("abgen_eval", dict(model="fake", judge_max_tokens=16, limit=2))
    modes = _modes(d)
    assert "meta_eval.csv" in modes and set(modes.values()) == {"0o644"}, modes

BAD_RUN_INPUTS = [
    ("empty", lambda good: b"", None, "no records"),
    ("blank lines only", lambda good: b"\n\n", None, "no records"),
    ("not UTF-8", lambda good: good.replace(b"hallucinate", b"hallucin\xe9", 1), 1, "not UTF-8"),
    ("duplicate example_id", lambda good: good.rstrip(b"\n") + b"\n" + good.splitlines(keepends=True)[0], None, "duplicate"),
    ("wrong type", lambda good: good.replace(b'"research_background": "', b'"research_background": 7, "x": "', 1), 1, "expected a string"),
]

@pytest.mark.parametrize("case,corrupt,line,text", BAD_RUN_INPUTS, ids=[b[0] for b in BAD_RUN_INPUTS])
def test_bad_input_run_writes_nothing(abgen_env, run_bench, results, case, corrupt, line, text):
    from scibench.runs import run_dirs
    fs, f = abgen_env
    run_bench("abgen", dict(model="fake", judge="fake", limit=2, max_tokens=16))
    before = {p: p.read_bytes() for p in results.rglob("*")  if p.is_file()}
    calls = fs.calls
    good = f.read_bytes(); f.write_bytes(corrupt(good))
    TALLY["tried"] += 1
    with pytest.raises(DataError) as e: run_bench("abgen", dict(model="fake", judge="fake", limit=2, max_tokens=16))
    assert str(f) in str(e.value) and text in str(e.value) and (line is None or e.value.line == line), str(e.value)
    if case == "duplicate example_id": assert e.value.line == len(good.rstrip(b"\n").splitlines()) + 1 and e.value.field == "example_id"
    assert fs.calls == calls and len(run_dirs("abgen")) == 1                      # no call, no new folder
    assert {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == before   # the earlier run untouched
    assert not [p for p in results.rglob(".tmp-*")]
    TALLY["clear"] += 1


def test_zz_tally(capsys):
    "The figures for the closing note (bad inputs tried / clear errors), when the whole file runs."
    with capsys.disabled(): print(f"\n[bad inputs] tried {TALLY['tried']}, clear errors {TALLY['clear']}")
    assert TALLY["tried"] == TALLY["clear"]
