"AbGen end to end against a fake server (faults, kill and resume, secrets, bad input) and the real embedded model (slow)."
import json, os, signal, sqlite3, subprocess, sys, time
from pathlib import Path
import numpy as np
import pytest
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data
from scibench.benchmarks.abgen import meta_eval as abgen_eval
from scibench.core import DataError, read_jsonl, read_json

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-test-DO-NOT-LEAK-8f3a2c"


def registry(tmp_path, fs, **kw):
    "A models.toml with `fake` served by the fake server, its key in $SCIBENCH_TEST_KEY."
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in kw.items())
    p = tmp_path / "models.toml"
    p.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake-model"\napi_key_env = "SCIBENCH_TEST_KEY"\n'
                 f'max_retries = 6\ntimeout = 5\nprice_in = 1.0\nprice_out = 2.0\n{extra}')
    return p


@pytest.fixture
def fake_env(tmp_path, monkeypatch, fake_server):
    def make(models_kw=None, **server_kw):   # models_kw: fields of the `fake` registry entry
        fs = fake_server(**server_kw)
        monkeypatch.setenv("SCIBENCH_MODELS", str(registry(tmp_path, fs, **(models_kw or {}))))
        monkeypatch.setenv("SCIBENCH_TEST_KEY", SECRET)
        return fs
    return make


def test_prompt_includes_method_and_context():
    e = abgen.load_abgen("sample")[0]
    p = abgen.generation_prompt(e)
    for part in (e["research_background"], e["method"], e["main_experiment"]["experiment_setup"],
                 e["main_experiment"]["results"], e["ablation_study"]["module_name"]):
        assert part in p
    assert e["ablation_study"]["experiment_setup"] not in p


def test_judge_prompt_has_context_reference_and_criterion():
    e = abgen.load_abgen("sample")[1]
    system, user = abgen.Setup().turns(e, "MY DESIGN", "soundness")
    # the user turn: the context (method included), the design, the module and the reference shown as an example
    assert e["method"] in user and e["ablation_study"]["experiment_setup"] in user and "MY DESIGN" in user
    assert e["ablation_study"]["module_name"] in user
    # the system turn: the criterion's definition and a descriptor per score, the module put in
    assert "**soundness**" in system and e["ablation_study"]["module_name"] in system and "$module" not in system
    assert all(f"Score {k}:" in system for k in range(1, 6)) and "Therefore, the score is" in system


def test_run_with_faults_and_permanent_failure(fake_env, run_bench):
    # every judge prompt for one example's design contains POISON → permanent 400 for its 4 criteria
    fake_env(fault_rate=0.3, faults=("429", "500", "reset"), permanent="Self-Check Decoding")
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", max_tokens=32, protocol="scibench"))
    s = read_json(d / "scores.json")
    recs = read_jsonl(d / "records.jsonl")
    assert len(recs) == 8 and all("id" in r and "failure" in r for r in recs)
    # examples 7, 8 (context 4) hit the permanent fault at generation: failure records, not scores
    failed = [r for r in recs if r["generation_failure"]]
    assert len(failed) == 2 and all(r["generation_failure"].startswith("http 400") for r in failed)
    assert all(r["failure"].startswith("generation: http 400") for r in failed)
    assert all(v is None for r in failed for v in r["scores"].values())
    for c in abgen.CRITERIA:
        assert s[c]["n"] == 6 and s[c]["failures"] == 2 and s[c]["generation_failures"] == 2
        assert 1 <= s[c]["mean"] <= 5
    assert meta["usage"]["total"]["failures"] == 2
    assert meta["usage"]["total"]["cost_usd"] > 0
    # 2 of 8 items failed: above the 10% threshold, so the run says partial (and the tables leave it out)
    assert meta["status"] == "partial" and meta["failures"] == 2 and meta["n"] == 8
    assert list(meta["failures_by_reason"].values()) == [2]
    assert [h["failures"] for h in meta["headline"]] == [2] * 4


def _execute_code(results, **params):
    return (f"import os; os.environ['SCIBENCH_RESULTS'] = {str(results)!r}\n"
            f"from scibench.run import execute; execute('abgen', {params!r}, notebook=False, progress=False)")


def test_kill_and_resume_no_repeated_calls(fake_env, tmp_path):
    fs = fake_env(latency=0.3)
    results, cache = tmp_path / "results", tmp_path / "cache"
    env = {**os.environ, "SCIBENCH_CACHE": str(cache), "MAX_CONCURRENCY": "2"}
    code = _execute_code(results, model="fake", judge="fake", max_tokens=16)
    p = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()
    while fs.calls < 14 and time.time() - t0 < 60: time.sleep(0.05)
    p.send_signal(signal.SIGKILL); p.wait()
    parent = results / "abgen" / "sample" / "fake"
    assert [x.name.startswith(".tmp-") for x in parent.iterdir()] == [True], "killed: only a temporary folder, no run"
    con = sqlite3.connect(cache / "llm-cache.sqlite"); n_cached = con.execute("SELECT COUNT(*) FROM cache").fetchone()[0]; con.close()
    assert 8 <= n_cached < 40
    before = dict(fs.completions)
    subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True)
    runs = [x for x in parent.iterdir() if not x.name.startswith(".") and x.is_dir()]
    assert len(runs) == 1 and (parent / "latest").read_text().strip() == runs[0].name
    recs = read_jsonl(runs[0] / "records.jsonl")
    assert len(recs) == 8 and len({r["example_id"] for r in recs}) == 8
    # 8 generations + 32 judge calls; only requests in flight at the kill may have been answered twice
    assert len(fs.completions) == 40
    repeated = sum(1 for k, n in fs.completions.items() if n > 1)
    assert repeated <= 2, repeated
    assert sum(fs.completions.values()) == 40 + repeated
    assert sum(1 for k in before if fs.completions[k] > before[k]) <= 2
    meta = read_json(runs[0] / "meta.json")
    assert meta["usage"]["total"]["cached"] == n_cached and meta["status"] == "complete"
    from scibench.runs import list_runs
    os.environ["SCIBENCH_RESULTS"] = str(results)
    try: st = list(list_runs("abgen")["status"])
    finally: del os.environ["SCIBENCH_RESULTS"]
    # the rerun removed the killed run's temporary folder (issue 20 item 9) and said so
    assert sorted(st) == ["complete"] and not any(x.name.startswith(".tmp-") for x in parent.iterdir())


def test_second_run_zero_calls_and_runs_kept(fake_env, run_bench):
    fs = fake_env()
    m1, d1 = run_bench("abgen", dict(model="fake", judge="fake", limit=3, max_tokens=16))
    n = fs.calls
    assert n == 3 + 12
    m2, d2 = run_bench("abgen", dict(model="fake", judge="fake", limit=3, max_tokens=16))
    assert fs.calls == n and m2["usage"]["total"]["calls"] == 0
    assert d1 != d2 and d1.exists() and d2.exists(), "a rerun never replaces an earlier run"
    assert (d2.parent / "latest").read_text().strip() == d2.name
    # --refresh asks again
    m3, _ = run_bench("abgen", dict(model="fake", judge="fake", limit=3, max_tokens=16), refresh=True)
    assert fs.calls == 2 * n and m3["usage"]["total"]["cached"] == 0


def test_secret_never_written(fake_env, tmp_path):
    fs = fake_env()
    results = tmp_path / "res"
    env = {**os.environ, "SCIBENCH_CACHE": str(tmp_path / "cache"), "SCIBENCH_RESULTS": str(results)}
    r = subprocess.run([sys.executable, "-m", "scibench.cli", "run", "abgen", "--model", "fake", "--judge", "fake",
                        "--limit", "2", "-p", "max_tokens", "16"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "status    complete" in r.stdout and "importance" in r.stdout and "Kernel" not in r.stderr + r.stdout
    [out] = [d for d in (results / "abgen" / "sample" / "fake").iterdir() if d.is_dir()]
    assert (out / "run.ipynb").exists() and (out / "records.jsonl").exists()
    nb = (out / "run.ipynb").read_text()
    assert str(ROOT) not in nb and str(tmp_path) not in nb.replace(str(results), ""), "no absolute path of this machine in the notebook"
    # the key really was used...
    assert any(h.get("authorization") == f"Bearer {SECRET}" for h in fs.headers_seen)
    # ...and is nowhere on disk
    for d in (out, tmp_path / "cache"):
        for f in d.rglob("*"):
            if f.is_file(): assert SECRET.encode() not in f.read_bytes(), f
    assert "SCIBENCH_TEST_KEY" in (out / "meta.json").read_text()   # the variable's name is recorded, not its value


def test_bad_input_names_file_line_field_and_keeps_results(fake_env, run_bench, results, tmp_path, monkeypatch):
    from scibench.runs import run_dirs
    fs = fake_env()
    data = tmp_path / "data"; (data / "samples" / "abgen").mkdir(parents=True)
    good = (ROOT / "data/samples/abgen/sample.jsonl").read_text().splitlines()
    f = data / "samples" / "abgen" / "sample.jsonl"
    f.write_text("\n".join(good) + "\n")
    monkeypatch.setenv("SCIBENCH_DATA", str(data))
    run_bench("abgen", dict(model="fake", judge="fake", limit=2, max_tokens=16))
    snapshot = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    calls = fs.calls
    # a missing nested field on line 3
    rows = [json.loads(l) for l in good]; del rows[2]["main_experiment"]["results"]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as e:
        run_bench("abgen", dict(model="fake", judge="fake", limit=2, max_tokens=16))
    assert (e.value.line, e.value.field) == (3, "main_experiment.results") and str(f) in str(e.value)
    # a malformed line 5
    bad = good[:4] + ['{"example_id": "x", "method": '] + good[5:]
    f.write_text("\n".join(bad) + "\n")
    with pytest.raises(DataError, match=r"sample.jsonl:5: invalid JSON"):
        run_bench("abgen", dict(model="fake", judge="fake", max_tokens=16))
    # caught before any call and before any folder: the earlier run is untouched and alone
    assert fs.calls == calls and len(run_dirs("abgen")) == 1
    assert {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == snapshot


def released_files(tmp_path):
    "Small files in the format of AbGen's released human evaluation and judge outputs."
    human = json.loads((ROOT / "data/samples/abgen/human_evaluation.json").read_text())
    root = tmp_path / "released"; (root / "processed_outputs").mkdir(parents=True)
    slim = [{k: r[k] for k in ("meta_id", "model_response", "importance", "faithfulness", "soundness")} for r in human]
    (root / "human_evaluation.json").write_text(json.dumps(slim, indent=1))
    perfect = [{"meta_id": r["meta_id"], **{c: {"explanation": "", "score": r[c]["score"]} for c in abgen_data.HUMAN_CRITERIA},
                "overall": {"explanation": "", "score": float(np.mean([r[c]["score"] for c in abgen_data.HUMAN_CRITERIA]))}} for r in slim]
    # files named as the authors named them: by served model
    (root / "processed_outputs" / "gpt-4.1.json").write_text(json.dumps(perfect))
    flipped = [{"meta_id": r["meta_id"], **{c: {"explanation": "", "score": 6 - r[c]["score"]} for c in abgen.CRITERIA}} for r in perfect]
    (root / "processed_outputs" / "Qwen3-8B.json").write_text(json.dumps(flipped))
    (root / "processed_outputs" / "Qwen3-32B-AWQ.json").write_text(json.dumps(flipped))
    (root / "processed_outputs" / "Meta-Llama-3.1-70B-Instruct-FP8.json").write_text(json.dumps(perfect))
    (root / "processed_outputs" / "gemini-2.5-flash-preview-05-20.json").write_text(json.dumps(perfect))
    return root


def test_released_meta_evaluation_path(tmp_path):
    t = abgen_eval.released_tables(released_files(tmp_path), n_resamples=50)
    t5, t9 = t["abgen_released_table5"].set_index("judge"), t["abgen_released_table9"].set_index("judge")
    assert t5.loc["GPT-4.1", "overall (ours)"].startswith("1.000") and t5.loc["GPT-4.1", "file"] == "gpt-4.1.json"
    assert t5.loc["GPT-4.1", "overall (paper)"] == "0.246"        # Table 5, pooled Pearson
    assert t5.loc["Qwen3-8B", "importance (ours)"].startswith("-1.000")
    assert t9.loc["Qwen3-8B", "soundness (paper)"] == "0.818"     # Table 9, system Kendall
    assert t9.loc["GPT-4.1", "faithfulness (ours)"].startswith("1.000")
    # served names → the paper's names, which differ between the two tables for Gemini
    assert t5.loc["Qwen3-32B", "overall (paper)"] == "0.248" and t9.loc["Qwen3-32B", "overall (paper)"] == "0.864"
    assert t5.loc["Llama-3.1-70B", "soundness (paper)"] == "-0.020" and t9.loc["Llama-3.1-70B", "importance (paper)"] == "0.264"
    assert t5.loc["Gemini-2.5-Flash", "importance (paper)"] == "0.391" and t9.loc["Gemini-2.5-Flash-Preview", "importance (paper)"] == "0.590"
    for t in (t5, t9): assert not (t.filter(like="(paper)") == "–").any().any(), t


def test_meta_evaluate_counts_missing_judge_scores():
    human = abgen_data.load_human_eval(split="sample")
    judged = [{"meta_id": r["meta_id"], **{c: {"score": r[c]["score"] if i % 5 else None} for c in abgen_data.HUMAN_CRITERIA}}
              for i, r in enumerate(human)]
    me = abgen_eval.meta_evaluate(human, judged, criteria=("importance",), corrs=("pearson",), n_resamples=20)
    assert set(me["missing_judge"]) == {sum(1 for i in range(len(human)) if i % 5 == 0)}
    inst = me[me.level == "instance"].iloc[0]
    assert inst["skipped"] >= 1


@pytest.mark.slow
def test_end_to_end_real_embedded_model(local_server, run_bench):
    meta, d = run_bench("abgen", dict(model="local", judge="local", limit=2, max_tokens=64, judge_max_tokens=160, max_rationale=200),
                        notebook=True)
    recs = read_jsonl(d / "records.jsonl")
    assert len(recs) == 2 and meta["status"] in ("complete", "partial") and (d / "run.ipynb").exists()
    resampled = meta["provenance"].get("protocol", {}).get("resamples", 0)   # their retry loop's new judge samples
    assert meta["usage"]["total"]["requests"] == 2 + 8 + resampled
    s = read_json(d / "scores.json")
    for c in abgen.CRITERIA:
        assert s[c]["n"] + s[c]["failures"] == 2
        if s[c]["n"]: assert 1 <= s[c]["mean"] <= 5
    m2, d2 = run_bench("abgen_eval", dict(model="local", limit=1, judge_max_tokens=160, max_rationale=200))
    outs = json.loads((d2 / "judge_outputs.json").read_text())
    assert len(outs) == 4 and all(set(abgen.CRITERIA) <= set(o) for o in outs)
    assert all((o[c]["score"] is None) == (o[c]["failure"] is not None) for o in outs for c in abgen.CRITERIA)


@pytest.mark.slow
def test_over_long_request_is_a_failure_record(local_server):
    from scibench.llm import LLM
    r = LLM("local", cache=False, progress=False).chat("word " * 9000, max_tokens=8)
    assert not r["ok"] and "http 400" in r["error"] and "context" in r["error"]


def test_judge_calls_go_out_before_the_slowest_generation(fake_env, run_bench):
    "Issue 13 item 2: an example is judged as soon as its design arrives, not after every generation (and records keep input order)."
    order = []
    def reply(body):
        judge = any(m["role"] == "system" for m in body["messages"])
        order.append("judge" if judge else "gen")
        return "Rationale: fine. Therefore, the score is: 3" if judge else "Research Objective: x.\nExperiment Process: y."
    first = abgen.load_abgen("sample")[0]["ablation_study"]["module_name"]
    fake_env(slow={f"## Module to Ablate\n{first}": 1.5}, reply=reply,   # the first example's generation takes 1.5 s
             models_kw=dict(structured="none"))                             # the replies are text
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", max_tokens=32, protocol="scibench"))
    assert meta["status"] == "complete" and order.count("gen") == 8 and order.count("judge") == 32
    last_gen = max(i for i, k in enumerate(order) if k == "gen")
    assert order[:last_gen].count("judge") >= 24, order   # the 7 others are judged meanwhile; stage by stage: none
    recs = read_jsonl(d / "records.jsonl")
    assert [r["example_id"] for r in recs] == [e["example_id"] for e in abgen.load_abgen("sample")]


def test_derived_plan_counts_the_calls_of_a_run_against_the_stub(fake_server, run_bench):
    "Issue 19: `--dry-run`'s plan is `run` itself against `stub_reply`; a run against a fake server answering the same makes those calls."
    from scibench.bench import get_benchmark
    from scibench.run import derive_plan, derive_requests, resolve
    b = get_benchmark("abgen")
    fs = fake_server(reply=b.stub_reply)
    params, ep = dict(model="fake", judge="fake", max_tokens=64, judge_max_tokens=32), {"fake": {"base_url": fs.base_url}}
    cfg = b.make_config(params)
    plan = {r["role"]: r for r in derive_plan(b, cfg, resolve(b, cfg, ep))}
    assert fs.calls == 0 and {r: p["stages"] for r, p in plan.items()} == {"model": {"generate": 8}, "judge": {"judge": 32}}
    assert plan["model"]["completion_tokens"] == 8 * 64 and plan["judge"]["completion_tokens"] == 32 * 32
    reqs = derive_requests(b, cfg, resolve(b, cfg, ep))
    assert len(reqs) == 8 and {r["role"] for r in reqs} == {"model"} and reqs[0]["body"]["max_completion_tokens"] == 64
    meta, _ = run_bench("abgen", params, endpoints=ep)
    assert meta["status"] == "complete" and all(s["n"] == 8 for s in meta["headline"])
    assert {r: meta["usage"][r]["requests"] for r in plan} == {r: p["calls"] for r, p in plan.items()} == {"model": 8, "judge": 32}
