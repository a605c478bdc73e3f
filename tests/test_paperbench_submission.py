"""Issue 18 items 4-5: a real PaperBench reproduction attempt is graded on its `submission/` only (never the agent's
`logs/`, never `.git/`), and the judge reads the paper, sized from its context window, or is said not to."""
import json, shutil, tarfile
from pathlib import Path
import pytest
from scibench.benchmarks.rubrics import paperbench
from bench import rubrics as rubrics_perf
from scibench.benchmarks.rubrics import method as rubrics
from scibench.bench import get_benchmark
from scibench.core import read_json, read_jsonl
from scibench.llm import LLM, ModelSpec

TS = "2025-03-14T10-22-31-UTC"
LOG_MARKER = "AGENT-TRANSCRIPT-MARKER-7f3a"       # only in the agent's logs: no prompt may carry it
SUBMISSION = {"README.md": "# Reproduction\nRun reproduce.sh to train with label smoothing.\n",
              "reproduce.sh": "#!/bin/bash\npython src/train.py --smoothing 0.1 | tee reproduce.log\n",
              "reproduce.log": "epoch 1 loss 0.52 accuracy 0.81\nepoch 2 loss 0.41 accuracy 0.86\n",
              "src/train.py": "import torch\n\ndef smoothed_loss(logits, y, eps=0.1):\n    return torch.nn.functional.cross_entropy(logits, y, label_smoothing=eps)\n"}
INDEXED = set(SUBMISSION)                           # reproduce.log is part of the submission


def attempt(root: Path, log_kb: int = 20) -> Path:
    "A reproduction attempt in PaperBench's layout under `root`: `<ts>/submission/` (with `.git/`) beside `<ts>/logs/`."
    t = root/TS
    for rel, text in SUBMISSION.items():
        (t/"submission"/rel).parent.mkdir(parents=True, exist_ok=True); (t/"submission"/rel).write_text(text)
    (t/"submission"/".git").mkdir(); (t/"submission"/".git"/"HEAD").write_text("ref: refs/heads/main\n")
    (t/"logs").mkdir()
    line = f"[agent] {LOG_MARKER} tool call: bash python src/train.py loss accuracy smoothing README reproduce\n"
    (t/"logs"/"inspect.log").write_text(line * (log_kb * 1024 // len(line)))
    (t/"logs"/"docker.log").write_text(f"docker build ... {LOG_MARKER} label smoothing loss\n" * 40)
    return t


def layouts(tmp_path) -> dict:
    "Every layout PaperBench produces → (entry, the indexed folder's path within it, the prefix of the left-out log paths)."
    src = tmp_path/"src"; attempt(src)
    out = {}
    for name, mode in (("submission.tar", "w"), ("submission.tar.gz", "w:gz")):
        d = tmp_path/"archives"/name.split(".", 1)[1]; d.mkdir(parents=True)
        with tarfile.open(d/name, mode) as t: t.add(src/TS, arcname=TS)
        out[name] = (d/name, f"{TS}/submission", f"{TS}/")
    case = tmp_path/"case"; (case/"grading").mkdir(parents=True)            # a JudgeEval-style case folder with its archive
    (case/"grading"/"expected_result.json").write_text('{"score": 0}')
    shutil.copy(out["submission.tar"][0], case/"submission.tar")
    out["case folder"] = (case, f"submission.tar/{TS}/submission", f"submission.tar/{TS}/")
    folder = tmp_path/"folder"; attempt(folder)                              # the archive, extracted
    out["folder"] = (folder, f"{TS}/submission", f"{TS}/")
    out["timestamp folder"] = (folder/TS, "submission", "")                  # the <timestamp>/ folder itself
    out["submission folder"] = (folder/TS/"submission", "", None)            # a folder that is itself the submission
    return out


def test_every_layout_indexes_the_submission_only(tmp_path):
    sub = sum(len(t.encode()) for t in SUBMISSION.values())
    for name, (entry, within, logs_at) in layouts(tmp_path).items():
        ix = paperbench.RepoIndex(entry)
        assert set(ix.texts) == INDEXED, name                                    # reproduce.log in, logs/ and .git/ out
        assert not any(LOG_MARKER in t for _, t in ix.chunks), name
        r = ix.report
        assert r["submission"] == (within or ".") and r["files"] == 4 and r["chars"] == sum(len(t) for t in SUBMISSION.values()), name
        left = {x["path"]: x["why"] for x in r["left_out"]}
        git = f"{within}/.git/" if within else ".git/"
        assert left[git] == "hidden folder (1 files)", (name, left)
        if logs_at is not None:
            assert left[f"{logs_at}logs/"] == "agent logs, not the submission (2 files)", (name, left)
        if name == "case folder": assert left["grading/"] == "the human grades, not the submission (1 files)"
        json.dumps(r)                                                            # writable as repos.json
    logs = sum(p.stat().st_size for p in (tmp_path/"src"/TS/"logs").iterdir())
    assert sub < 400 and logs > 20_000                                          # as on a real attempt: far more log than code


def test_judge_eval_case_with_attempt_archive(fake_server, tmp_path):
    "A JudgeEval case whose submission.tar holds `<ts>/submission/` beside `<ts>/logs/`: graded on the submission only."
    d = layouts(tmp_path)["case folder"][0]
    sample = Path(__file__).resolve().parent.parent/"data"/"samples"/"rubrics"/"judge_eval"/"tsls"/"expected_result.json"
    root = tmp_path/"je"; shutil.copytree(d, root/"tsls"/"0")
    shutil.copy(sample, root/"tsls"/"0"/"grading"/"expected_result.json")
    prompts = []
    def reply(body):
        prompts.append(body["messages"][-1]["content"]); return json.dumps({"answer": "pass", "rationale": "r"})
    fs = fake_server(reply=reply)
    llm = LLM(ModelSpec("fake", fs.base_url, "fake", max_retries=0), cache=False, progress=False)
    recs, s = paperbench.judge_eval(llm, root, k=3, grader="retrieval")
    assert s["cases_graded"] == 1 and len(recs) == len(prompts) == 7 and not any(LOG_MARKER in p for p in prompts)
    left = {x["path"]: x["why"] for x in s["repos"][0]["left_out"]}
    assert left[f"submission.tar/{TS}/logs/"] == "agent logs, not the submission (2 files)"
    assert s["repos"][0]["files"] == 4 and s["repos"][0]["repo"].endswith("tsls/0/submission.tar")


# -- the run: repos.json, prompts, the paper ---------------------------------------------------------------

BIG_PAPER = "PAPER-BODY-MARKER " + "The label smoothing method trains with a smoothed target distribution. " * 700   # ~50K characters


def _split(own_data, tmp_path):
    "The sample split with a reproduction attempt archive added to tsls and a long paper for tsls."
    d = own_data("rubrics")/"samples"/"rubrics"
    src = tmp_path/"attempt-src"; attempt(src)
    with tarfile.open(d/"repos"/"tsls"/"attempt.tar.gz", "w:gz") as t: t.add(src/TS, arcname=TS)
    (d/"papers"/"tsls"/"paper.md").write_text((d/"papers"/"tsls"/"paper.md").read_text() + "\n\n" + BIG_PAPER)
    return d


def _registry(fs, tmp_path, monkeypatch, context):
    reg = tmp_path/"models.toml"
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nmax_retries = 0\n'
                   f'[models.judge]\nbase_url = "{fs.base_url}"\nmodel = "judge"\nmax_retries = 0\ncontext = {context}\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))


def _recording(fake_server):
    prompts = []
    def reply(body):
        last = body["messages"][-1]["content"]
        if last.startswith("You grade"): prompts.append(last)
        return rubrics_perf.w3_reply(body)
    return fake_server(reply=reply), prompts


def test_run_grades_submission_only_and_reads_the_whole_paper(fake_server, own_data, run_bench, results, tmp_path, monkeypatch):
    d = _split(own_data, tmp_path)
    fs, prompts = _recording(fake_server)
    _registry(fs, tmp_path, monkeypatch, 128_000)
    meta, out = run_bench("rubrics", dict(model="fake", judge="judge", k=3, settings="direct", judge_eval=False))
    assert meta["status"] == "complete"
    assert prompts and not any(LOG_MARKER in p for p in prompts)                # no grading prompt carries the agent's logs
    repos = {Path(r["repo"]).name: r for r in read_json(out/"repos.json")}
    a = repos["attempt.tar.gz"]
    assert a["files"] == 4 and a["submission"] == f"{TS}/submission"
    left = {x["path"]: x["why"] for x in a["left_out"]}
    assert left[f"{TS}/logs/"] == "agent logs, not the submission (2 files)"
    assert left[f"{TS}/submission/.git/"].startswith("hidden folder")
    # every leaf prompt starts with the whole paper, before the ancestors and the criterion (a shared prefix per paper)
    papers = {p["id"]: p for p in rubrics.load_papers(root=d)}
    for p in prompts:
        pid = next(i for i, x in papers.items() if f'the paper "{x["title"]}"' in p)
        head = f'You grade a code repository that tries to reproduce the paper "{papers[pid]["title"]}", one rubric criterion at a time.'
        assert p.startswith(f"{head}\n\n## Paper\n{papers[pid]['text']}\n\n"), pid
        assert p.index(papers[pid]["text"]) < p.index("## Criterion") < p.index("## Repository files")
        if "## Context in the rubric" in p: assert p.index(papers[pid]["text"]) < p.index("## Context in the rubric")
    gp = read_json(out/"scores.json")["grader_paper"]
    assert all(v["note"] is None and v["shown"] == v["chars"] > 0 for v in gp["papers"].values())
    assert meta["provenance"]["grader paper"].startswith("whole paper shown: ")


def test_run_on_a_small_judge_omits_the_paper_and_says_so(fake_server, own_data, run_bench, results, tmp_path, monkeypatch, capfd):
    d = _split(own_data, tmp_path)
    fs, prompts = _recording(fake_server)
    _registry(fs, tmp_path, monkeypatch, 8192)                                   # the embedded SmolLM2's window
    meta, out = run_bench("rubrics", dict(model="fake", judge="judge", k=3, settings="direct", judge_eval=False))
    assert meta["status"] == "complete"
    note = "paper omitted (judge context 8192 tokens)"
    papers = {p["id"]: p for p in rubrics.load_papers(root=d)}
    of = lambda pid: [p for p in prompts if f'the paper "{papers[pid]["title"]}"' in p]
    assert of("tsls") and not any("PAPER-BODY-MARKER" in p or "## Paper" in p for p in of("tsls"))   # the long paper: in no prompt
    assert of("rwr") and all(f"## Paper\n{papers['rwr']['text']}\n\n" in p for p in of("rwr"))        # the short one fits: whole
    gp = read_json(out/"scores.json")["grader_paper"]
    assert gp["papers"]["tsls"] == dict(chars=gp["papers"]["tsls"]["chars"], shown=0, note=note) and gp["context"] == 8192
    assert gp["papers"]["rwr"]["note"] is None                                  # ... the short one fits and is shown whole
    assert note in meta["provenance"]["grader paper"] and note in read_json(out/"meta.json")["provenance"]["grader paper"]
    err = capfd.readouterr().err                                                # the terminal says so
    assert "rubrics: grader: whole paper shown: rwr (1,358 characters); " in err and f"{note}: tsls (" in err
    rows = read_jsonl(out/"grades.jsonl")
    assert {r["paper_seen"]["note"] for r in rows if r["paper"] == "tsls"} == {note}
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path/"fig"))
    rubrics.write_tables()
    cap = (results/"tables"/"rubrics_table1.md").read_text().splitlines()[0]
    assert f"{note} for 1 of 2 papers" in cap and "whole paper shown for 1 of 2 papers" in cap


def test_grade_paper_sizing_by_the_judges_window(fake_server, tmp_path):
    "`grade` alone: a large window shows the whole paper first in every prompt; a small one omits it and says why."
    (tmp_path/"loss.py").write_text("def smoothed_loss(x):\n    return x\n")
    prompts = []
    def reply(body):
        prompts.append(body["messages"][-1]["content"]); return json.dumps({"answer": "pass", "rationale": "r"})
    fs = fake_server(reply=reply)
    make = lambda ctx: LLM(ModelSpec("fake", fs.base_url, "fake", max_retries=0, context=ctx), cache=False, progress=False)
    items = [dict(criterion="the smoothed loss", importance=2, ancestors=["the method", "training"]), dict(criterion="the plot", importance=1)]
    job = dict(title="t", items=items, repo=tmp_path, paper=BIG_PAPER)
    [g] = paperbench.grade(make(128_000), [job], k=2)
    assert len(prompts) == 2 and all(p.startswith('You grade a code repository that tries to reproduce the paper "t", one rubric criterion '
                                                  f"at a time.\n\n## Paper\n{BIG_PAPER}\n\n") for p in prompts)
    assert g["paper_seen"] == dict(chars=len(BIG_PAPER), shown=len(BIG_PAPER), note=None)
    assert all(v["prompt_chars"] > len(BIG_PAPER) for v in g["verdicts"])
    prompts.clear()
    [g] = paperbench.grade(make(8192), [job], k=2)
    assert len(prompts) == 2 and not any("PAPER-BODY-MARKER" in p or "## Paper" in p for p in prompts)
    assert g["paper_seen"] == dict(chars=len(BIG_PAPER), shown=0, note="paper omitted (judge context 8192 tokens)")
    assert all(v["prompt_chars"] < paperbench.context_budget(ModelSpec("m", "u", "m", context=8192)) for v in g["verdicts"])
    prompts.clear()
    [g] = paperbench.grade(make(128_000), [job], k=2, paper_chars=0)              # off
    assert not any("## Paper" in p for p in prompts) and g["paper_seen"]["note"] == "paper not shown (paper_chars=0)"
    for bad in (-2, 300):                                                        # -1 (auto) or 0 (none) only
        with pytest.raises(Exception, match="paper_chars"): get_benchmark("rubrics").make_config(dict(paper_chars=bad))


def test_an_archive_expanding_past_the_cap_is_refused(tmp_path, monkeypatch):
    """Issue 20 item 9: an archive whose files expand past `MAX_EXPANDED` is not extracted: a `DataError` names it (a
    repository entry), and a JudgeEval case with it is skipped with that reason; nothing is left in the cache."""
    from scibench.core import DataError, cache_dir
    monkeypatch.setattr(paperbench, "MAX_EXPANDED", 1 << 20)
    src = tmp_path/"src"; attempt(src)
    (src/TS/"submission"/"weights.bin").write_bytes(bytes(2 << 20))           # 2 MiB of zeros: a few KB compressed
    case = tmp_path/"je"/"tsls"/"0"; (case/"grading").mkdir(parents=True)
    sample = Path(__file__).resolve().parent.parent/"data"/"samples"/"rubrics"/"judge_eval"/"tsls"/"expected_result.json"
    shutil.copy(sample, case/"grading"/"expected_result.json")
    archive = case/"submission.tar.gz"
    with tarfile.open(archive, "w:gz") as t: t.add(src/TS, arcname=TS)
    assert archive.stat().st_size < 100_000
    with pytest.raises(DataError, match=r"expands to more than 1,048,576 bytes \(MAX_EXPANDED\): not extracted") as e:
        paperbench.RepoIndex(archive)
    assert str(archive) in str(e.value)
    assert not list((cache_dir()/"paperbench_archives").glob("*"))             # no extraction left behind
    cases, skipped = paperbench.judge_eval_cases(tmp_path/"je")
    assert cases == [] and [x["case"] for x in skipped] == ["tsls/0"]
    assert "expands to more than 1,048,576 bytes" in skipped[0]["reason"] and "submission.tar.gz" in skipped[0]["reason"]
    monkeypatch.setattr(paperbench, "MAX_EXPANDED", 4 << 20)                   # under the cap: extracted and indexed
    assert set(paperbench.RepoIndex(archive).texts) == INDEXED
