"Rubrics benchmark: known answers, data errors, the agent loop, a full run on the fake server, the real model (slow)."
import json, re, tarfile
from pathlib import Path
import numpy as np
import pytest
from scibench import metrics
from bench import rubrics as rubrics_perf
from scibench.benchmarks.rubrics import method as rubrics
from scibench.benchmarks.rubrics import paperbench
from scibench.bench import ConfigError, get_benchmark
from scibench.core import DataError, read_json
from scibench.llm import LLM, ModelSpec, pipeline

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT/"data"/"samples"/"rubrics"
SHARED = ROOT.parent/"shared"/"data"/"paperbench"     # real PaperBench files for development (absent in a user's clone)
needs_shared = pytest.mark.skipif(not SHARED.exists(), reason=f"{SHARED} is absent (real PaperBench files, development only)")


def strict_json(text):
    "Parse JSON, failing on NaN / Infinity (not JSON)."
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def node(id, w, subs=(), cat=None, score=None):
    n = {"id": id, "requirements": f"req {id}", "weight": w, "sub_tasks": list(subs), "task_category": cat,
         "finegrained_task_category": None}
    if score is not None: n["score"] = score
    return n


# -- trees ------------------------------------------------------------------------------------------

def test_effective_weights_and_tree_score(tmp_path):
    t = node("r", 1, [node("a", 2, [node("a1", 1, cat="Code Development", score=1), node("a2", 3, cat="Code Execution", score=0)]),
                      node("b", 2, [node("b1", 5, cat="Result Analysis", score=1)])])
    p = tmp_path/"rubric.json"; p.write_text(json.dumps(t))
    leaves = paperbench.load_paperbench_rubric(p)
    assert [l["id"] for l in leaves] == ["a1", "a2", "b1"]
    assert np.allclose([l["weight"] for l in leaves], [0.5 * 0.25, 0.5 * 0.75, 0.5])
    assert sum(l["weight"] * l["score"] for l in leaves) == pytest.approx(0.5 * 0.25 + 0.5)
    assert paperbench.category_shares(paperbench.to_checklist(leaves)) == pytest.approx({"Code Development": 0.125, "Code Execution": 0.375, "Result Analysis": 0.5})


def test_sample_trees_weights_sum_to_one_and_judge_eval_root_matches():
    for p in sorted((SAMPLE/"papers").glob("*/rubric.json")):
        assert sum(l["weight"] for l in paperbench.load_paperbench_rubric(p)) == pytest.approx(1.0)
    exp = read_json(SAMPLE/"judge_eval"/"tsls"/"expected_result.json")
    # every node's stored score is the weighted mean of its leaves' scores
    def check(n):
        if n["sub_tasks"]:
            assert n["score"] == pytest.approx(sum(l["weight"] * l["score"] for l in paperbench.rubric_leaves(n)))
            [check(c) for c in n["sub_tasks"]]
    check(exp)


def test_bad_rubric_names_file_and_field(tmp_path):
    t = node("r", 1, [node("a", 1), {"id": "b", "requirements": "x", "sub_tasks": []}])
    p = tmp_path/"rubric.json"; p.write_text(json.dumps(t))
    with pytest.raises(DataError, match=r"rubric.json.*root.sub_tasks\[1\].weight"):
        paperbench.load_paperbench_rubric(p)
    p.write_text("{not json")
    with pytest.raises(DataError, match="invalid JSON"):
        paperbench.load_paperbench_rubric(p)


def test_judge_eval_rejects_non_binary_leaf(tmp_path):
    d = tmp_path/"je"/"x"; (d/"submission").mkdir(parents=True)
    (d/"expected_result.json").write_text(json.dumps(node("r", 1, [node("a", 1, cat="Code Development", score=0.5)], score=0.5)))
    with pytest.raises(DataError, match="leaf score must be 0 or 1"):
        paperbench.judge_eval_cases(tmp_path/"je")[0]


def test_judge_eval_reads_tar_submission(tmp_path, monkeypatch):
    d = tmp_path/"je"/"tsls"; d.mkdir(parents=True)
    (d/"expected_result.json").write_text((SAMPLE/"judge_eval"/"tsls"/"expected_result.json").read_text())
    with tarfile.open(d/"submission.tar", "w") as t: t.add(SAMPLE/"judge_eval"/"tsls"/"submission", arcname="submission")
    cases = paperbench.judge_eval_cases(tmp_path/"je")[0]
    assert (cases[0]["submission"]/"tsls.py").exists()


# -- metrics ----------------------------------------------------------------------------------------

def test_max_rouge_known_answers_and_matches_rouge_score():
    assert rubrics.max_rouge(["the cat sat"], ["the cat sat on the mat"]) == pytest.approx((2/3, 2/3))
    assert rubrics.max_rouge(["x y"], ["a b"]) == (0.0, 0.0)
    assert all(np.isnan(rubrics.max_rouge([], ["a"])))
    from rouge_score import rouge_scorer
    sc = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    g = rubrics_perf._synthetic_rubric(7, 1); r = rubrics_perf._synthetic_rubric(5, 2)
    r1, rl = metrics.rouge_matrices(g, r)
    for i in range(len(g)):
        for j in range(len(r)):
            s = sc.score(r[j], g[i])
            assert r1[i, j] == pytest.approx(s["rouge1"].fmeasure) and rl[i, j] == pytest.approx(s["rougeL"].fmeasure)


def test_match_prf_tiny_lists():
    ref = ["Implement the smoothed cross-entropy loss.", "Train ResNet-18 on CIFAR-10 for 30 epochs."]
    match_prf = lambda g, r, tau: tuple(rubrics.intrinsic(g, r, (tau,))[f"{m}@{tau}"] for m in ("precision", "recall", "f1"))
    assert match_prf(ref, ref, 0.7) == pytest.approx((1, 1, 1))
    p, r, f = match_prf(["Bake a chocolate cake."], ref, 0.7)
    assert (p, r, f) == (0.0, 0.0, 0.0)
    p, r, f = match_prf([ref[0]], ref, 0.7)
    assert (p, r) == pytest.approx((1.0, 0.5)) and f == pytest.approx(2/3)


def test_rubric_score_and_failures():
    items = [dict(criterion="a", importance=4), dict(criterion="b", importance=1)]
    assert paperbench.rubric_score(items, ["pass", "fail"])["score"] == pytest.approx(0.8)
    s = paperbench.rubric_score(items, [None, "pass"])                     # eq. 1 over every item: the failure counts
    assert s["score"] == pytest.approx(0.2) and s["judged_share"] == pytest.approx(0.2) and s["failures"] == 1
    assert paperbench.rubric_score(items, [None, None])["score"] is None     # nothing judged: no score


def test_extrinsic_skips_constant():
    e = rubrics.extrinsic([0.2, 0.2, 0.2], [0.1, 0.5, 0.9])
    assert np.isnan(e["spearman"]) and e["repos"] == 3


def test_parse_rubric_variants():
    assert rubrics.parse_rubric(None)["failure"] == "no response"
    r = rubrics.parse_rubric('```json\n{"items": [{"criterion": "Train it", "importance": "4", "category": "execution"}]}\n```')
    assert r["items"] == [dict(criterion="Train it", importance=4, category="Code Execution")]


def test_repo_files_skip_binary_and_oversized(tmp_path):
    (tmp_path/"a.py").write_text("x = 1\n" * 10)
    (tmp_path/"big.txt").write_text("y" * 5000)
    (tmp_path/"w.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path/"long.md").write_text("line\n" * 800)
    f = paperbench.repo_files(tmp_path, max_bytes=4500, chunk_size=1000, overlap=100)
    assert f["skipped"] == {"big.txt": "oversized (5000 bytes > 4500)", "w.bin": "binary"}
    assert sum(p == "long.md" for p, _ in f["chunks"]) >= 4


# -- agent loop -------------------------------------------------------------------------------------

def test_agent_loop_scripted(fake_server, tmp_path):
    script = [{"thought": "t", "tool": "read_file", "path": "paper.md"},
              "this is not json",
              {"thought": "t", "tool": "write_file", "path": "rubric.json",
               "content": '{"criterion": "Implement RWR sampling", "importance": 5, "category": "Code Development"}\n'
                          '{"criterion": "Plot curves", "importance": 2, "category": "Result Analysis"}'},
              {"thought": "t", "tool": "finish"}]
    def reply(body):
        n = sum(m["role"] == "assistant" for m in body["messages"])
        s = script[n]; return s if isinstance(s, str) else json.dumps(s)
    fs = fake_server(reply=reply)
    llm = LLM(ModelSpec("fake", fs.base_url, "fake"), cache=False, progress=False)
    papers = rubrics.load_papers("sample")
    [a] = pipeline([0], lambda _: rubrics.arun_agent(llm, papers[0], papers[1:], tmp_path/"ws", rubrics.RubricsConfig(max_steps=6)), [llm])
    assert a["steps"] == 4 and a["ended"] == "finish" and a["failure"] is None
    assert a["transcript"][1]["observation"].startswith("error: could not parse an action")
    assert [i["importance"] for i in a["items"]] == [5, 2]
    # step limit without a rubric: a recorded failure
    fs2 = fake_server(reply=lambda b: json.dumps({"thought": "t", "tool": "list_files"}))
    llm2 = LLM(ModelSpec("fake", fs2.base_url, "fake"), cache=False, progress=False)
    [a] = pipeline([0], lambda _: rubrics.arun_agent(llm2, papers[0], [], tmp_path/"ws2", rubrics.RubricsConfig(max_steps=3)), [llm2])
    assert a["steps"] == 3 and a["failure"].startswith("agent wrote no rubric.json (step limit")


# -- full run on the fake server ----------------------------------------------------------------------

SKILL_DOC = ("# Skill\n1. Read the whole paper and list every method component, experiment, dataset, metric and baseline. "
             "2. Write one checkable item per claim: what must be implemented, what must be run, which result must match. "
             "3. Importance 5 for the core method and the main results, 1 for minor logging or plotting details. "
             "4. Avoid vague items and name the numbers that must be reproduced.")


def fake_reply(body):
    sysmsg = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    last = body["messages"][-1]["content"]
    if sysmsg == paperbench.PB_FILE_RANKING_PROMPT: return "tsls.py\nREADME.md"     # PaperBench's judge (JudgeEval)
    if last == paperbench.PB_GRADING_PROMPT: return "# Expectations\n.\n# Reality\n.\n# Score\n1"
    if sysmsg == paperbench.PB_PARSE_PROMPT: return json.dumps({"valid_score": True, "score": 1, "explanation": "e"})
    if "## Criterion" in last:                 # grader: pass when most criterion words are in the retrieved files
        crit = last.split("## Criterion\n")[1].split("\n")[0].lower()
        ctx = last.split("## Repository files")[1].lower()
        words = [w for w in re.findall(r"[a-z]{4,}", crit)]
        hit = np.mean([w in ctx for w in words]) if words else 0
        return json.dumps({"answer": "pass" if hit >= 0.5 else "fail", "rationale": f"{hit:.2f} of the words found"})
    if "skill document" in last: return SKILL_DOC
    if "workspace" in sysmsg:
        n = sum(m["role"] == "assistant" for m in body["messages"])
        if n == 0: return json.dumps({"thought": "read", "tool": "read_file", "path": "paper.md"})
        if n == 1:
            paper = body["messages"][-1]["content"]
            sents = [s.strip() for s in re.split(r"(?<=\.)\s", paper) if 40 < len(s.strip()) < 200][:5]
            items = [{"criterion": s, "importance": 1 + i % 5, "category": "Code Development"} for i, s in enumerate(sents)]
            return json.dumps({"thought": "write", "tool": "write_file", "path": "rubric.json", "content": json.dumps({"items": items})})
        return json.dumps({"thought": "done", "tool": "finish"})
    paper = last.split("## Paper\n")[1]
    sents = [s.strip() for s in re.split(r"(?<=\.)\s", paper) if 40 < len(s.strip()) < 200]
    k = 3 if "Examples written" not in last else 6
    return json.dumps({"items": [{"criterion": s, "importance": 5 - i % 5, "category": "Code Execution"} for i, s in enumerate(sents[:k])]})


@pytest.fixture
def fake_registry(fake_server, tmp_path, monkeypatch):
    fs = fake_server(reply=fake_reply)
    reg = tmp_path/"models.toml"
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nmax_retries = 0\n'
                   f'[models.fake2]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nmax_retries = 0\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    return fs


def test_run_on_fake_server(fake_registry, run_bench, results, tmp_path, monkeypatch):
    meta, out = run_bench("rubrics", dict(model="fake", judge="fake", k=3, max_steps=4))
    for f in ("records.jsonl", "grades.jsonl", "judge_eval.jsonl", "scores.json", "meta.json", "skill.md",
              "transcripts/agentic/tsls.json", "transcripts/skill/rwr.json", "transcripts/skill_distillation.json"):
        assert (out/f).exists(), f
    assert not (out/"workspaces").exists()
    recs = [strict_json(l) for l in (out/"records.jsonl").read_text().splitlines()]
    assert len(recs) == 2 * 5                                    # (reference + 4 settings) x 2 papers
    assert all(isinstance(r["id"], str) and "failure" in r for r in recs)
    assert sorted(r["id"] for r in recs) == sorted(f"{s}/{p}" for s in ["reference", *rubrics.SETTINGS] for p in ("rwr", "tsls"))
    s = strict_json((out/"scores.json").read_text())
    st = s["settings"]
    for k in rubrics.SETTINGS:
        assert st[k]["generation_failures"] == 0 and st[k]["grading_failures"] == 0, k
        assert st[k]["count"]["mean"] > 0 and st[k]["f1@0.7"]["n"] == 2
    assert s["skill"]["used"] and s["skill"]["chars"] > 0 and s["skill"]["paper"] == "rwr" and s["skill"]["model"] == "fake"
    ref = {r["paper"]: r["repo_scores"] for r in recs if r["setting"] == "reference"}
    assert ref["tsls"]["full"]["score"] > ref["tsls"]["empty"]["score"]   # the grader separates complete from empty repos
    assert meta["status"] == "complete" and meta["n"] == 10 and meta["failures"] == 0
    assert meta["config"]["settings"] == list(rubrics.SETTINGS) and meta["config"]["k"] == 3
    # headline: F1@0.7 and Spearman per setting, over the 2 papers
    head = {h["name"]: h for h in meta["headline"]}
    assert set(head) == {f"{k} {m}" for k in rubrics.SETTINGS for m in ("F1@0.7", "Spearman")}
    assert all(h["n"] + h["failures"] == 2 for h in head.values())
    assert head["direct F1@0.7"]["value"] == pytest.approx(st["direct"]["f1@0.7"]["mean"])
    je = {r["category"]: r for r in s["judge_eval"]}
    assert je["Overall"]["n"] + je["Overall"]["failures"] == 7
    calls = fake_registry.calls
    meta2, out2 = run_bench("rubrics", dict(model="fake", judge="fake", k=3, max_steps=4))    # rerun: everything from the cache
    assert fake_registry.calls == calls and meta2["usage"]["total"]["calls"] == 0 and out2 != out
    assert (out2/"records.jsonl").read_text() == (out/"records.jsonl").read_text()
    # a second backbone with the same judge: JudgeEval is shown once, every run gets its rows and figure panels
    meta3, out3 = run_bench("rubrics", dict(model="fake2", judge="fake", k=3, max_steps=4, settings="direct"))
    assert meta3["status"] == "complete" and meta3["n"] == 4
    # tables from these results only (the newest complete run of each split and model)
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path/"fig"))
    paths = rubrics.write_tables()
    t1 = (results/"tables"/"rubrics_table1.csv").read_text()
    assert "+Distilled Skill" in t1 and "Claude-Sonnet" in t1 and "scibench" in t1
    from scibench.runs import run_label
    assert run_label(out2) in t1 and run_label(out3) in t1 and run_label(out) not in t1     # out is superseded by out2
    assert "settings=direct" in t1 and "(n=2)" in t1             # non-default parameters; 2 papers: no CI
    t1md = (results/"tables"/"rubrics_table1.md").read_text()
    assert "synthetic sample" in t1md
    import pandas as pd
    je = pd.read_csv(results/"tables"/"rubrics_judge_eval.csv")
    assert list(je.columns[:4]) == ["source", "run", "settings", "judge"] and not je.duplicated(["judge", "category"]).any()
    assert (je["source"] == "paper").sum() == 1 and je["grader"].iloc[0] == "paperbench"       # PaperBench's published row
    ours = je[je["source"] != "paper"]
    assert ours["category"].iloc[0] == "Overall" and ours["accuracy"].str.contains(r"\(n=\d\)").all()
    stats = pd.read_csv(results/"tables"/"rubrics_stats.csv")
    assert set(stats["run"]) == {run_label(out2), run_label(out3)}
    assert any(str(p).endswith("rubrics_importance_hist.png") for p in paths)
    assert any(str(p).endswith("rubrics_category_shares.png") for p in paths)
    first = {p: Path(p).read_bytes() for p in paths if str(p).endswith(".md")}
    rubrics.write_tables()
    assert all(Path(p).read_bytes() == b for p, b in first.items())     # deterministic


def test_failures_are_recorded_not_zero(fake_server, tmp_path, monkeypatch, run_bench):
    "A generator that never answers with a rubric and a judge that never answers pass/fail: failures, not zeros."
    fs = fake_server(reply=lambda b: "I am not sure.")
    reg = tmp_path/"models.toml"
    reg.write_text(f'[models.bad]\nbase_url = "{fs.base_url}"\nmodel = "bad"\nmax_retries = 0\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    meta, out = run_bench("rubrics", dict(model="bad", judge="bad", settings="direct,skill", k=2, max_steps=2))
    s = strict_json((out/"scores.json").read_text())
    st = s["settings"]
    assert st["direct"]["generation_failures"] == 2 and st["direct"]["spearman"]["n"] == 0
    assert st["direct"]["spearman"]["skipped_papers"] == 2 and st["direct"]["spearman"]["mean"] is None
    assert st["skill"]["failures"][0]["failure"].startswith("no skill document") or st["skill"]["generation_failures"] == 2
    assert st["reference"]["grading_failures"] == st["reference"]["grading_verdicts"] > 0
    recs = [strict_json(l) for l in (out/"records.jsonl").read_text().splitlines()]
    assert all(x["score"] is None for r in recs if r["setting"] == "reference" for x in r["repo_scores"].values())
    # JudgeEval under PaperBench's judge: the 5 leaves it called for fail to parse, score 0 and are counted; the 2
    # Result Analysis leaves score 0 uncalled (the sample's reproduce.sh wrote nothing)
    assert (s["judge_eval"][0]["failed"], s["judge_eval"][0]["n"], s["judge_eval"][0]["failures"]) == (5, 7, 0)
    # every generated rubric failed: 4 of 6 records (the 2 reference rows have a rubric) → not complete, failures counted
    assert all(isinstance(r["id"], str) and "failure" in r for r in recs)
    assert {r["id"] for r in recs if r["failure"]} == {"direct/rwr", "direct/tsls", "skill/rwr", "skill/tsls"}
    assert meta["status"] in ("failed", "partial") and meta["n"] == 6 and meta["failures"] == 4
    assert sum(meta["failures_by_reason"].values()) == 4
    assert all(h["value"] is None and h["n"] == 0 and h["failures"] == 2 for h in meta["headline"])


def test_every_request_failing_is_a_failed_run(fake_server, tmp_path, monkeypatch, run_bench):
    fs = fake_server(permanent='"role"')  # every request's messages contain "role": HTTP 400 for every request
    meta, out = run_bench("rubrics", dict(model="m", judge="j", settings="direct,icl", k=2, judge_eval=False),
                          endpoints={"m": {"base_url": fs.base_url}, "j": {"base_url": fs.base_url}})
    assert meta["status"] == "failed" and meta["failures"] == 4 and meta["n"] == 6
    assert all("http 400" in r for r in meta["failures_by_reason"])
    strict_json((out/"scores.json").read_text())
    assert not (out/"judge_eval.jsonl").exists()


def test_dry_run_plans_without_calls(fake_registry, results):
    from scibench.run import execute
    meta = execute("rubrics", dict(model="fake", judge="fake", k=3, max_steps=4, max_items=4), dry_run=True, notebook=False, progress=False)
    assert meta["status"] == "dry-run" and fake_registry.calls == 0 and not results.exists()
    rows = {r["role"]: r for r in meta["plan"]}
    assert set(rows) == {"model", "judge"}                     # skill_model empty: the model distils the skill
    papers = rubrics.load_papers("sample")
    # direct + icl: 1 call per paper; agentic + skill: max_steps + the forced final-write turn per paper; distillation: + 1
    assert rows["model"]["calls"] == 2 * 2 + 2 * 2 * 5 + 6
    assert 0 < rows["model"]["completion_tokens"] <= rows["model"]["calls"] * 8192
    # + JudgeEval: 3 calls for each of the 5 leaves that are not Result Analysis (those score 0 uncalled)
    assert rows["judge"]["calls"] == sum(len(p["repos"]) * (len(p["leaves"]) + 4 * 4) for p in papers) + 3 * 5
    assert all(r["prompt_tokens"] > r["calls"] * 100 for r in rows.values())
    # a separate skill model is its own row; no JudgeEval, no skill: fewer calls
    m2 = execute("rubrics", dict(model="fake", judge="fake", skill_model="fake2"), dry_run=True)
    assert {r["role"]: r["model"] for r in m2["plan"]} == {"model": "fake", "skill_model": "fake2", "judge": "fake"}
    m3 = execute("rubrics", dict(model="fake", judge="fake", settings="direct", judge_eval=False), dry_run=True)
    assert {r["role"]: r["calls"] for r in m3["plan"]}["judge"] == sum(len(p["repos"]) * (len(p["leaves"]) + rubrics._GUESS_ITEMS) for p in papers)
    assert fake_registry.calls == 0


def test_plan_is_what_a_run_against_the_stub_makes(fake_server, run_bench, results):
    """The derived plan's calls per role are the requests a whole run makes against `FakeServer(reply=stub_reply)` (the
    stub's agent reads every file once, then writes; every rubric and JudgeEval case is graded)."""
    from scibench.run import derive_plan, resolve
    b = get_benchmark("rubrics")
    fs = fake_server(reply=b.stub_reply)
    params, endpoints = dict(model="fake", judge="fake", k=3, max_items=4), {"fake": {"base_url": fs.base_url}}
    cfg = b.make_config(params)
    rows = derive_plan(b, cfg, resolve(b, cfg, endpoints))
    meta, _ = run_bench("rubrics", params, endpoints=endpoints)
    assert meta["status"] == "complete" and meta["failures"] == 0
    assert {r["role"]: r["calls"] for r in rows} == {role: meta["usage"][role]["requests"] for role in ("model", "judge")}
    by = {r["role"]: r["stages"] for r in rows}
    assert set(by["model"]) == {"generate", "agent", "distill"} and set(by["judge"]) == {"grade", "judge_eval"}
    assert by["judge"]["judge_eval"] == 3 * 5 and by["model"]["generate"] == 2 * 3 + 1    # direct, icl, agentic; the distillation


def test_config_validation(fake_registry):
    b = get_benchmark("rubrics")
    cfg = b.make_config(dict(settings="direct, agentic", k="3", judge_eval="false"))
    assert (cfg.settings, cfg.k, cfg.judge_eval, cfg.judge, cfg.skill_model) == (["direct", "agentic"], 3, False, "local", "")
    with pytest.raises(ConfigError, match="'bogus' is not one of direct, icl, agentic, skill"):
        b.make_config(dict(settings="direct,bogus"))
    with pytest.raises(ConfigError, match="retrieval"):
        b.make_config(dict(retrieval="grep"))
    assert {p.name for p in b.roles()} == {"model", "judge", "skill_model"}
    assert b.default_runs and all(p.doc for p in b.params())
    from scibench.run import data_check
    with pytest.raises(ConfigError, match="no split 'nosuchsplit' here .*splits here: sample; the published ones: `make data`"):
        data_check(b, b.make_config(dict(split="nosuchsplit")))


@needs_shared
def test_real_paperbench_trees():
    "The real PaperBench rubrics load, their leaf weights sum to 1, checklists and category shares follow."
    trees = sorted((SHARED/"rubrics").glob("*.rubric.json"))
    assert len(trees) >= 10
    for p in trees:
        leaves = paperbench.load_paperbench_rubric(p)
        assert sum(l["weight"] for l in leaves) == pytest.approx(1.0), p.name
        assert len(paperbench.to_checklist(leaves)) == len(leaves)
        assert sum(paperbench.category_shares(paperbench.to_checklist(leaves)).values()) == pytest.approx(1.0)
    exp = SHARED/"judge_eval"/"all-in-one"/"0"/"grading"/"expected_result.json"
    leaves = paperbench.load_paperbench_rubric(exp)
    assert all(l["score"] in (0, 1) for l in leaves)


def test_downloader_fails_clearly_offline(monkeypatch, tmp_path):
    from scibench.data import OfflineError
    monkeypatch.setattr(paperbench, "PB_MEDIA", "http://127.0.0.1:9/")
    with pytest.raises(OfflineError, match="cannot download"):
        paperbench.download_paperbench(tmp_path, ids=["rice"])


# -- real model -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_end_to_end_local(local_server, run_bench):
    meta, out = run_bench("rubrics", dict(model="local", judge="local", settings="direct,agentic", k=2, max_tokens=200,
                                          judge_max_tokens=40, max_items=4, max_steps=2, obs_chars=800, context_chars=1000, limit=1))
    recs = [json.loads(l) for l in (out/"records.jsonl").read_text().splitlines()]
    assert {r["setting"] for r in recs} == {"reference", "direct", "agentic"}
    for r in recs:        # every record either has items or a failure reason
        assert r["items"] or r["failure"]
    assert meta["status"] in ("complete", "partial") and meta["failures"] == sum(1 for r in recs if r["failure"])
    st = read_json(out/"scores.json")["settings"]["reference"]
    assert st["grading_verdicts"] == 7 * 4


def test_token_counts_are_the_embedders_without_loading_it():
    "count_tokens reads only the tokenizer file, and counts what all-MiniLM-L6-v2's own tokenizer counts."
    from scibench.retrieval import embedder
    texts = ["Implements the KL-divergence term ∑ p log(p/q) — naïve café", "x" * 3000, "", "Reproduces Table 2 (ResNet-50, 76.1% top-1)"]
    assert rubrics.count_tokens(texts) == [len(embedder().tokenizer.tokenize(t)) for t in texts]


def test_committed_sample_run_fills_every_table_and_figure():
    "Issue 21: the committed default run is complete, each Rubrics table has our rows for every setting, both figures exist."
    import pandas as pd
    from scibench.core import read_json
    root = Path(__file__).resolve().parent.parent
    runs = sorted((root/"results"/"rubrics"/"sample"/"local").glob("2*"))
    if not runs: pytest.skip("no committed rubrics run")
    assert read_json(runs[-1]/"meta.json")["status"] == "complete"
    for name in ("rubrics_table1", "rubrics_table2", "rubrics_table5_6", "rubrics_stats", "rubrics_judge_eval"):
        t = pd.read_csv(root/"results"/"tables"/f"{name}.csv", dtype=str)
        ours = t[t["run"] == f"sample/local/{runs[-1].name}"]
        assert len(ours), name
        if "setting" in t:
            assert set(rubrics.SETTINGS.values()) <= set(ours["setting"]), name
    for f in ("rubrics_category_shares", "rubrics_importance_hist"):
        assert (root/"figures"/f"{f}.png").stat().st_size > 10_000, f
