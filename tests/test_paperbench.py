"PaperBench side of the Rubrics benchmark: checklist views, the grader's context, JudgeEval layouts, repository archives."
import json, tarfile
from collections import Counter
from pathlib import Path
import pytest
from scibench.benchmarks.rubrics import paperbench
from scibench.core import DataError
from scibench.llm import LLM, ModelSpec

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT/"data"/"samples"/"rubrics"
SHARED = ROOT.parent/"shared"/"data"/"paperbench"     # real PaperBench files for development (absent in a user's clone)
needs_shared = pytest.mark.skipif(not SHARED.exists(), reason=f"{SHARED} is absent (real PaperBench files, development only)")
FORGET = SHARED/"rubrics"/"what-will-my-model-forget.rubric.json"


def scripted(fs_factory, prompts, answer="pass"):
    "A judge on the fake server that records every prompt and answers `answer`."
    def reply(body):
        prompts.append(body["messages"][-1]["content"])
        return json.dumps({"answer": answer, "rationale": "scripted"})
    fs = fs_factory(reply=reply)
    return lambda **kw: LLM(ModelSpec("fake", fs.base_url, "fake", max_retries=0, **kw), cache=False, progress=False)


# -- item 2: checklist views ---------------------------------------------------------------------------

@needs_shared
def test_checklist_view_real_trees():
    trees = sorted((SHARED/"rubrics").glob("*.rubric.json"))
    assert len(trees) == 10
    for p in trees:
        tree = paperbench._read_tree(p)
        v = paperbench.checklist_view(tree, 80)
        assert 60 <= len(v) <= 100, (p.name, len(v))
        assert sum(x["weight"] for x in v) == pytest.approx(1.0), p.name
        assert sum(x["leaves"] for x in v) == len(paperbench.rubric_leaves(tree))        # the cut covers every leaf once
        hist = Counter(x["importance"] for x in v)
        assert set(hist) == {1, 2, 3, 4, 5}, (p.name, hist)
        assert all(0.05 <= hist[i] / len(v) <= 0.40 for i in range(1, 6)), (p.name, hist)   # roughly quintiles
        # importance follows the weight: a heavier item never gets a lower importance
        for a in v:
            for b in v:
                if a["weight"] > b["weight"] * (1 + 1e-9): assert a["importance"] >= b["importance"]
        assert all(x["category"] in paperbench.CATEGORIES for x in v), p.name
        assert paperbench.checklist_view(tree, 80) == v                                   # deterministic


def test_checklist_view_small_budget_and_errors():
    t = {"id": "r", "requirements": "root", "weight": 1, "sub_tasks": [
        {"id": f"c{i}", "requirements": f"C{i}", "weight": 1, "task_category": None, "sub_tasks": [
            {"id": f"c{i}l{j}", "requirements": f"L{i}.{j}", "weight": j + 1, "sub_tasks": [],
             "task_category": "Code Development" if j < 3 else "Result Analysis"} for j in range(4)]} for i in range(3)]}
    v = paperbench.checklist_view(t, 5)          # 3 children; splitting one gives 6: closer to 5 than 3 is
    assert len(v) == 6 and sum(x["weight"] for x in v) == pytest.approx(1.0)
    assert [x["id"] for x in paperbench.checklist_view(t, 3)] == ["c0", "c1", "c2"]
    # C's leaves: Code Development weighs 1+2+3 = 6 of 10
    assert paperbench.checklist_view(t, 3)[0]["category"] == "Code Development"
    with pytest.raises(ValueError, match="n_items"): paperbench.checklist_view(t, 0)


# -- item 5: the grader sees the code, the criterion's ancestors and the paper ----------------------------

@needs_shared
def test_grade_prompt_of_real_leaf_has_ancestors(fake_server, tmp_path):
    leaves = paperbench.load_paperbench_rubric(FORGET)
    by_text = Counter(l["requirements"] for l in leaves)
    text = next(t for t, n in by_text.items() if n > 1)            # a leaf text repeated under different parents
    twins = [l for l in leaves if l["requirements"] == text][:2]
    assert twins[0]["ancestors"] != twins[1]["ancestors"] and len(twins[0]["ancestors"]) >= 2
    items = paperbench.to_checklist(twins)
    assert items[0]["ancestors"] == twins[0]["ancestors"]
    (tmp_path/"main.py").write_text("print('hello')\n")
    prompts = []
    llm = scripted(fake_server, prompts)()
    g = paperbench.grade(llm, [dict(title="What will my model forget?", items=items, repo=tmp_path)], k=3)
    assert g[0]["judged"] == 2 and len(set(prompts)) == 2          # the same leaf text, two distinct prompts
    for it in items:
        p = next(x for x in prompts if all(a in x for a in it["ancestors"]))
        assert "## Context in the rubric" in p and p.index(it["ancestors"][-1]) < p.index("## Criterion") < p.index("## Repository files")


def test_grade_shows_whole_files_within_the_window(fake_server, tmp_path):
    small = "def smoothed_loss(x):\n    return x  # label smoothing loss\n" * 20          # ~1.2K characters
    (tmp_path/"loss.py").write_text(small)
    (tmp_path/"big.py").write_text("# label smoothing loss helper\n" + "y = 1\n" * 20_000)   # ~120K characters
    prompts = []
    make = scripted(fake_server, prompts)
    items = [dict(criterion="label smoothing loss", importance=1)]
    # a 4,096-token judge: (4096 - 256 - 256) × 3 = 10,752 characters for the whole prompt
    g = paperbench.grade(make(context=4096), [dict(title="t", items=items, repo=tmp_path)], k=2)
    v = g[0]["verdicts"][0]
    seen = {f["path"]: f for f in v["files"]}
    assert seen["loss.py"] == dict(path="loss.py", chars=len(small), of=len(small), truncated=False)   # whole
    assert seen["big.py"]["truncated"] and seen["big.py"]["of"] > 100_000
    assert small in prompts[0] and "[truncated:" in prompts[0]
    assert v["prompt_chars"] == len(prompts[0]) <= paperbench.context_budget(ModelSpec("m", "u", "m", context=4096), 256)
    # no context in models.toml: the documented default window (32,768 tokens) gives the big file far more room
    prompts.clear()
    g2 = paperbench.grade(make(), [dict(title="t", items=items, repo=tmp_path)], k=2)
    big2 = {f["path"]: f for f in g2[0]["verdicts"][0]["files"]}["big.py"]
    assert 80_000 < big2["chars"] and g2[0]["verdicts"][0]["prompt_chars"] <= (32_768 - 512) * 3
    g0 = paperbench.grade(make(), [dict(title="t", items=items, repo=tmp_path)], k=2, context_chars=0)   # a config's 0 = fit the window
    assert g0[0]["verdicts"][0]["files"] == g2[0]["verdicts"][0]["files"]


def test_grade_old_style_arguments(fake_server):
    "Older callers: items without ancestors, an integer context budget."
    prompts = []
    llm = scripted(fake_server, prompts)()
    repo = SAMPLE/"repos"/"tsls"/"full"
    g = paperbench.grade(llm, [dict(title="t", items=[dict(criterion="the loss", importance=2)], repo=repo)], k=3,
                         method="bm25", context_chars=1200)
    assert g[0]["score"] == 1.0 and "## Context in the rubric" not in prompts[0]
    files = g[0]["verdicts"][0]["files"]
    assert len(files) == 3 and sum(f["chars"] for f in files) <= 1200
    assert paperbench.grade_prompt("t", "c", "ctx").count("## Criterion\nc\n") == 1       # plan() calls it this way


# -- item 6: JudgeEval in PaperBench's layout ---------------------------------------------------------------

def _real_layout_case(root, paper="tsls", n="0", archive=True):
    d = root/paper/n
    (d/"grading").mkdir(parents=True)
    (d/"grading"/"expected_result.json").write_text((SAMPLE/"judge_eval"/"tsls"/"expected_result.json").read_text())
    if archive:
        with tarfile.open(d/"submission.tar", "w") as t: t.add(SAMPLE/"judge_eval"/"tsls"/"submission", arcname="submission")
    return d


def test_judge_eval_real_layout_with_archive_and_missing_one(fake_server, tmp_path):
    root = tmp_path/"judge_eval"
    _real_layout_case(root, "tsls", "0")
    _real_layout_case(root, "tsls", "1", archive=False)
    (root/"rwr"/"0"/"grading").mkdir(parents=True)
    (root/"rwr"/"0"/"grading"/"expected_result.json").write_text((SAMPLE/"judge_eval"/"tsls"/"expected_result.json").read_text())
    (root/"rwr"/"0"/"submission.tar").write_bytes(b"not a tar archive")
    prompts = []
    llm = scripted(fake_server, prompts)()
    recs, s = paperbench.judge_eval(llm, root, k=3, grader="retrieval")
    assert (s["cases_found"], s["cases_graded"], s["failure"]) == (3, 1, None)
    reasons = {x["case"]: x["reason"] for x in s["cases_skipped"]}
    assert set(reasons) == {"tsls/1", "rwr/0"} and "no submission" in reasons["tsls/1"] and "cannot extract" in reasons["rwr/0"]
    assert s["leaves"] == len(recs) == 7 and all(r["case"] == "tsls/0" and r["paper"] == "tsls" for r in recs)
    overall = s["metrics"][0]
    assert overall["category"] == "Overall" and overall["n"] == 7
    # the judge passes everything; the human passed 2 of 7 leaves: pass-class F1 4/9, fail class F1 0 → macro 2/9
    assert overall["f1_pass"] == pytest.approx(4 / 9) and overall["f1_macro"] == pytest.approx(2 / 9)
    assert s["repos"][0]["files"] == 4 and s["repos"][0]["repo"].endswith("tsls/0/submission.tar")
    assert any("## Context in the rubric" in p for p in prompts)
    json.dumps(s, allow_nan=False)                                                      # writable as scores.json


@needs_shared
def test_judge_eval_real_case_without_archive_is_counted(fake_server):
    prompts = []
    llm = scripted(fake_server, prompts)()
    recs, s = paperbench.judge_eval(llm, SHARED/"judge_eval")
    assert recs == [] and prompts == []
    assert (s["cases_found"], s["cases_graded"], s["failure"]) == (1, 0, None)
    assert s["cases_skipped"][0]["case"] == "all-in-one/0" and "no submission" in s["cases_skipped"][0]["reason"]
    assert s["metrics"] == [] and json.dumps(s, allow_nan=False)


def test_judge_eval_sample_layout_and_agreement():
    cases, skipped = paperbench.judge_eval_cases(SAMPLE/"judge_eval")
    assert [(c["case"], c["paper"]) for c in cases] == [("tsls", "tsls")] and skipped == []
    a = paperbench.agreement([1, 1, 0, 0, 1], [1, 0, 1, 0, 1])
    assert a["f1_pass"] == a["f1"] == pytest.approx(2 / 3) and a["f1_macro"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    both_wrong = paperbench.agreement([1, 0], [0, 1])
    assert both_wrong["f1_pass"] == 0.0 and both_wrong["f1_macro"] == 0.0


def test_download_judge_eval_writes_paperbench_layout(tmp_path, monkeypatch):
    import scibench.data
    base = f"{paperbench.PB_DATA}/judge_eval"
    tree = {base: [dict(type="dir", name="pinn", path=f"{base}/pinn")],
            f"{base}/pinn": [dict(type="dir", name="0", path=f"{base}/pinn/0")],
            f"{base}/pinn/0": [dict(type="dir", name="grading", path=f"{base}/pinn/0/grading"),
                               dict(type="file", name="submission.tar", path=f"{base}/pinn/0/submission.tar")],
            f"{base}/pinn/0/grading": [dict(type="file", name="expected_result.json", path=f"{base}/pinn/0/grading/expected_result.json"),
                                       dict(type="file", name="notes.txt", path=f"{base}/pinn/0/grading/notes.txt")]}
    monkeypatch.setattr(scibench.data, "github_listing", lambda repo, path: tree[path])
    got = []
    def fetch(url, dest, timeout=60):
        got.append(url); dest.parent.mkdir(parents=True, exist_ok=True); dest.write_text("x"); return dest
    monkeypatch.setattr(scibench.data, "fetch_url", fetch)
    out = paperbench.download_judge_eval(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in out) == ["pinn/0/grading/expected_result.json", "pinn/0/submission.tar"]
    assert all(u.startswith(paperbench.PB_MEDIA + "judge_eval/pinn/0/") for u in got)


# -- item 8: repositories: folders, archives, what was indexed --------------------------------------------

def test_repo_entries_archives_and_index_report(tmp_path):
    repos = tmp_path/"repos"/"tsls"; repos.mkdir(parents=True)
    full = SAMPLE/"repos"/"tsls"/"full"
    for name, mode in (("a.tar", "w"), ("b.tar.gz", "w:gz"), ("c.tgz", "w:gz")):
        with tarfile.open(repos/name, mode) as t: t.add(full, arcname="submission")
    d = repos/"d"; d.mkdir()                                       # a PaperBench case folder copied as is
    with tarfile.open(d/"submission.tar", "w") as t: t.add(full, arcname="submission")
    (d/"grading").mkdir(); (d/"grading"/"expected_result.json").write_text('{"score": 1}')
    f = repos/"f"; (f/"grading").mkdir(parents=True); (f/"grading"/"expected_result.json").write_text('{"score": 1}')
    import shutil; shutil.copytree(full, f/"submission")           # the same, extracted
    e = repos/"e"; (e/".git"/"objects").mkdir(parents=True); (e/".git"/"HEAD").write_text("ref")
    (e/"train.py").write_text("import torch\n"); (e/"run.log").write_text("epoch 1 loss 0.3\n"); (e/"w.bin").write_bytes(b"\0\1")
    (repos/"notes.txt").write_text("not a repository")
    entries = paperbench.repo_entries(repos)
    assert list(entries) == ["a", "b", "c", "d", "e", "f"]
    ref = paperbench.RepoIndex(full).report
    for name in "abcdf":                                           # the human grades in grading/ are never indexed
        r = paperbench.RepoIndex(entries[name]).report
        assert (r["files"], r["chars"], r["chunks"], r["archive"]) == (ref["files"], ref["chars"], ref["chunks"], True), name
        assert r["skipped"] == {"checkpoint.pt": "binary"}
    r = paperbench.RepoIndex(entries["e"]).report
    assert r["files"] == 2 and r["skipped"] == {".git/": "hidden folder (1 files)", "w.bin": "binary"} and not r["archive"]
    # extracted once: a second index reuses the cache
    cached = paperbench.locate_repo(entries["a"])[0]
    assert paperbench.locate_repo(entries["a"])[0] == cached and (cached/"loss.py").exists()
    (repos/"a").mkdir()
    with pytest.raises(DataError, match="two entries for repository 'a'"): paperbench.repo_entries(repos)
    with pytest.raises(DataError, match="folder or a"): paperbench.locate_repo(repos/"notes.txt")
