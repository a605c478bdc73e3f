"""The benchmark contract and the run machinery through the CLI, as a researcher uses them: validation, preflight,
ad-hoc endpoints, cache keyed by endpoint, run folders, honest status, summary, interrupts, tables."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest
from scibench.bench import benchmarks, get_benchmark
from scibench.core import read_json

ROOT = Path(__file__).resolve().parent.parent
FIVE = {"abgen", "abgen_eval", "arxivbench", "rubrics", "autobench", "citeme"}




@pytest.fixture
def env(tmp_path, results):
    return {"SCIBENCH_RESULTS": str(results), "SCIBENCH_CACHE": str(tmp_path / "cache")}


def test_registry_lists_the_five_benchmarks_with_documented_parameters():
    bs = benchmarks()
    assert set(bs) == FIVE
    for b in bs.values():
        assert b.paper.title and b.paper.authors and b.doc and b.tables and b.default_runs
        if b.name not in ("rubrics", "autobench"):   # those two papers print no arXiv id, and none is invented
            assert b.paper.url.startswith("https://arxiv.org/abs/"), b.paper
        ps = b.params()
        assert [p.name for p in ps[:3]] == ["model", "split", "limit"]
        assert all(p.doc for p in ps), [p.name for p in ps if not p.doc]
        assert len({p.name for p in ps}) == len(ps)


def test_benchmarks_command_and_help(cli, env):
    r = cli("benchmarks", env=env)
    assert r.returncode == 0
    for name, b in benchmarks().items():
        assert f"{name}: " in r.stdout
        for p in b.params(): assert p.name in r.stdout
    h = cli("run", "abgen", "--help", env=env)
    assert h.returncode == 0 and "--max-tokens" in h.stdout and "(default: 0)" in h.stdout and "--judge-base-url" in h.stdout
    assert "completion cap of the generation" in h.stdout
    lst = cli("run", "--help", env=env)
    assert all(n in lst.stdout for n in FIVE)


@pytest.mark.parametrize("bench", sorted(FIVE))
def test_every_parameter_is_accepted_and_dry_run_calls_nothing(cli, bench, fake_server, env, results):
    "Every listed parameter (at its default) goes through `scibench run --dry-run`, which plans without calling a model."
    fs = fake_server()
    b = get_benchmark(bench)
    args = []
    for p in b.params():
        v = ",".join(p.default) if isinstance(p.default, list) else p.default
        if p.role: continue
        args += ["-p", p.name, json.dumps(v) if isinstance(v, bool) else str(v)]
    roles = []
    for p in b.roles():
        if p.name == "model": roles += ["--model", "adhoc", "--base-url", fs.base_url]
        else: roles += [f"--{p.name.replace('_', '-')}", "adhoc"] if p.name in ("judge", "solver") else []
    r = cli("run", bench, *roles, *args, "--dry-run", env=env)
    assert r.returncode == 0, r.stderr
    assert "plan" in r.stdout and "calls" in r.stdout and "total" in r.stdout
    assert fs.calls == 0 and not results.exists()


def test_typo_unknown_names_exit_2_before_anything(cli, env, results):
    for args, needle in ((["abgen", "-p", "max_token", "16"], "unknown parameter 'max_token' for abgen (did you mean 'max_tokens'?)"),
                         (["abgen", "--max-token", "16"], "unrecognized arguments: --max-token"),
                         (["abgen", "--model", "nope"], "unknown model 'nope' for model; models: local"),
                         (["abgen", "--judge", "nojudge"], "unknown model 'nojudge' for judge"),
                         (["abgen", "-p", "max_tokens", "many"], "parameter 'max_tokens' expects int"),
                         (["foo"], "unknown benchmark 'foo'; benchmarks: abgen, abgen_eval, arxivbench, autobench, citeme, rubrics")):
        r = cli("run", *args, env=env)
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not results.exists(), "a bad configuration writes nothing"


def test_dead_endpoint_fails_fast_and_leaves_no_run(cli, env, results):
    t0 = time.time()
    r = cli("run", "abgen", "--model", "x", "--base-url", "http://127.0.0.1:9/v1", "--judge", "y", "--judge-base-url",
            "http://127.0.0.1:9/v1", "--limit", "2", env=env)
    assert r.returncode == 3 and "preflight failed: model 'x'" in r.stderr and "Connection refused" in r.stderr
    # fast = no retry schedule against a refused port (about 1 s quiet, in process); 60 s leaves room for a machine at
    # load 15, where the old 15 s bound on a subprocess failed
    assert time.time() - t0 < 60
    assert not results.exists()


def test_adhoc_endpoints_served_id_and_cache_keyed_by_endpoint(cli, env, results, fake_server):
    seen = []
    def reply(body):
        seen.append(body["model"]); return "Rationale: ok. Therefore, the score is: 4"
    a, b = fake_server(reply=reply), fake_server(reply=reply)
    args = ["run", "abgen", "--model", "mymodel", "--served-model", "org/ckpt-1", "--judge", "myjudge", "--judge-base-url", a.base_url,
            "--limit", "2", "-p", "max_tokens", "16", "--no-notebook", "--judge-structured", "none"]  # text replies
    r = cli(*args, "--base-url", a.base_url, env=env)
    assert r.returncode == 0, r.stderr
    assert "status    complete" in r.stdout and "importance" in r.stdout and "results   " in r.stdout
    assert "org/ckpt-1" in seen and "myjudge" in seen
    n = a.calls
    assert n == 2 + 8
    # the same command again: zero calls
    r = cli(*args, "--base-url", a.base_url, env=env)
    assert r.returncode == 0 and a.calls == n and "(0 sent, 10 from cache" in r.stdout
    # the same model name on another endpoint (a retrained checkpoint): fresh generation calls
    r = cli(*args, "--base-url", b.base_url, env=env)
    assert r.returncode == 0 and b.calls == 2
    runs = sorted(d for d in (results / "abgen" / "sample" / "mymodel").iterdir() if d.is_dir())
    assert len(runs) == 3
    m = read_json(runs[-1] / "meta.json")
    assert m["models"]["mymodel"]["base_url"] == b.base_url and m["models"]["mymodel"]["model"] == "org/ckpt-1"
    assert m["config"]["judge"] == "myjudge" and m["models"]["myjudge"]["base_url"] == a.base_url


def test_every_request_failing_is_a_failed_run_with_exit_1(cli, env, results, fake_server):
    fs = fake_server(permanent="user")   # every request has a user message: HTTP 400 for every request
    r = cli("run", "abgen", "--model", "m", "--base-url", fs.base_url, "--judge", "j", "--judge-base-url", fs.base_url,
            "--limit", "2", "--no-notebook", env=env)
    assert r.returncode == 1
    [d] = [d for d in (results / "abgen" / "sample" / "m").iterdir() if d.is_dir()]
    m = read_json(d / "meta.json")
    assert m["status"] == "failed" and m["failures"] == 2 and "status    failed" in r.stdout
    assert "http 400" in next(iter(m["failures_by_reason"]))
    json.loads((d / "scores.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def test_crash_in_a_stage_is_recorded_failed(run_bench, fake_server, monkeypatch):
    from scibench.benchmarks.abgen import method as abgen
    fs = fake_server()
    def boom(*a, **k): raise RuntimeError("stage exploded")
    monkeypatch.setattr(abgen.Setup, "judge_request", boom)   # inside the pipeline, after a generation
    monkeypatch.setitem(get_benchmark("abgen").__dict__, "run", abgen.run)
    meta, d = run_bench("abgen", dict(model="m", judge="m", limit=1), endpoints={"m": {"base_url": fs.base_url}})
    assert meta["status"] == "failed" and "stage exploded" in meta["status_reason"]
    assert "RuntimeError: stage exploded" in (d / "error.txt").read_text()


def test_interrupt_marks_the_run_and_a_rerun_resumes(cli, env, results, fake_server):
    fs = fake_server(latency=0.4)
    args = ["run", "abgen", "--model", "m", "--base-url", fs.base_url, "--judge", "m", "--concurrency", "1",
            "-p", "max_tokens", "16", "--no-notebook"]
    # SIGINT restored for the child: under `make test > log 2>&1 &` it would inherit SIGINT ignored (the CLI installs its
    # own handler anyway: tests/test_integrity.py checks that case)
    p = subprocess.Popen([sys.executable, "-m", "scibench.cli", *args], cwd=ROOT, env={**os.environ, **env},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.time()
    while fs.calls < 5 and time.time() - t0 < 60: time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "scibench: interrupted; run marked interrupted in" in err and not out
    [d] = [d for d in (results / "abgen" / "sample" / "m").iterdir() if d.is_dir()]
    assert read_json(d / "meta.json")["status"] == "interrupted"
    assert not (d.parent / "latest").exists(), "an interrupted run is never what `latest` names"
    done = fs.calls
    r = cli(*args, env=env)
    assert r.returncode == 0
    # 8 generations + 32 judge calls in all; without the cache the rerun would make all 40 again
    assert fs.calls - done <= 40 - (done - 2) and fs.calls <= 42, "the rerun resumed from the cache"


def test_tables_use_latest_complete_runs_and_say_what_they_left_out(run_bench, fake_server, results, tmp_path, monkeypatch):
    from scibench.run import make_tables, select_runs
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path / "fig"))
    fs = fake_server()
    ep = {"m": {"base_url": fs.base_url}}
    m1, d1 = run_bench("abgen", dict(model="m", judge="m", limit=2, max_tokens=16), endpoints=ep)
    m2, d2 = run_bench("abgen", dict(model="m", judge="m", limit=3, max_tokens=16), endpoints=ep)
    bad = fake_server(permanent="user")
    m3, d3 = run_bench("abgen", dict(model="m", judge="m", limit=2), endpoints={"m": {"base_url": bad.base_url}})
    assert m3["status"] == "failed"
    chosen, left = select_runs("abgen")
    assert chosen == [d2] and dict(left) == {d1: f"superseded by {d2.name}", d3: f"status failed: {m3['status_reason']}"}
    paths = make_tables(run_missing=False)
    t2 = (results / "tables" / "abgen_table2.md").read_text()
    assert d2.name in t2 and d1.name not in t2 and "max_tokens=16" in t2
    assert "(n=3)" in t2 and "synthetic sample" in t2
    runs = (results / "tables" / "runs.md").read_text()
    assert "superseded" in runs and "status failed" in runs
    assert any(str(p).endswith("runs.md") for p in paths)


# Issue 21 item 6: a model's own cap on completion tokens (models.toml `max_tokens`)
def test_models_toml_cap_lowers_defaults_keeps_given_values_and_cache_keys(fake_server, run_bench, tmp_path, monkeypatch):
    from scibench.runs import settings
    from scibench.run import summary_text
    bodies = []
    fs = fake_server(reply=lambda b: bodies.append(b) or "Rationale: fine. Therefore, the score is: 3")
    reg = tmp_path / "models.toml"
    reg.write_text(f'[models.capped]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nmax_tokens = 48\ntimeout = 5\nstructured = "none"\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    params = dict(model="capped", judge="capped", limit=1, judge_max_tokens=500)
    meta, d = run_bench("abgen", params)
    assert meta["status"] == "complete", meta["status_reason"]
    assert (meta["config"]["max_tokens"], meta["config"]["judge_max_tokens"]) == (48, 500)   # default 2048 lowered; given: kept
    assert meta["caps"] == {"max_tokens": dict(cap=48, model="capped", applied=True, default=2048),
                            "judge_max_tokens": dict(cap=48, model="capped", applied=False, given=500)}
    assert read_json(d / "meta.json")["caps"] == meta["caps"]
    assert sorted({b["max_completion_tokens"] for b in bodies}) == [48, 500] and len(bodies) == 5
    assert ("caps      models.toml max_tokens caps max_tokens 48 (default 2048, 'capped'); "
            "given above the cap, kept: judge_max_tokens=500 (cap 48 of 'capped')") in summary_text(meta)
    assert "max_tokens=48" in settings(d) and "judge_max_tokens=500" in settings(d)       # the tables' settings column
    n = fs.calls
    again, _ = run_bench("abgen", {**params, "max_tokens": 48})   # the same run with the cap given: its cache keys
    assert fs.calls == n and again["config"] == meta["config"] and again["usage"]["total"]["cached"] == 5
    assert "max_tokens" not in again["caps"]


def test_parse_watch_counts_only_structured_answers_that_end():
    from scibench.llm import ModelSpec, Request, msgs
    from scibench.run import ParseWatch
    spec = ModelSpec("j", "http://127.0.0.1:9/v1", "j", structured="json_schema")
    req = Request(msgs("q"), schema={"type": "object"})
    ans = lambda text, **kw: {**dict(ok=True, text=text, finish_reason="stop", structured=True), **kw}
    w = ParseWatch()
    for _ in range(10):
        w.note("judge", spec, req, ans('{"a": "cut', finish_reason="length"))   # cut at its cap: says nothing of the mode
        w.note("judge", spec, Request(msgs("q")), ans("prose"))                 # no schema asked
        w.note("judge", spec, req, ans("prose", structured=False))               # no format sent
        w.note("judge", spec, req, dict(ok=False, text=None, error="http 500"))  # a failed request
    assert w.reason is None and w.seen["judge"] == 0
    for _ in range(4):
        w.note("judge", spec, req, ans("prose"))
    assert w.reason is None                                                      # fewer than 5 answers
    w.note("judge", spec, req, ans("prose"))
    assert w.reason.startswith("judge answers unparsable: 5 of the first 5 answers of 'j' in structured-output mode "
                               "json_schema hold no JSON object")
    assert "--judge-structured llama (llama.cpp's server) or --judge-structured none" in w.reason
    ok = ParseWatch()
    for t in ['{"score": 3}', "prose", "prose", "prose", '{"score": 4}', "prose", "prose"]:
        ok.note("model", spec, req, ans(t))
    assert ok.reason is None and (ok.seen["model"], ok.bad["model"]) == (7, 5)    # 5 of 7: below 80%


def test_mostly_unparsable_answers_stop_the_run_early_with_a_hint(fake_server, run_bench):
    "A judge whose server ignores the structured-output format it was set to (llama.cpp's with json_schema, say)."
    from scibench.core import read_jsonl
    fs = fake_server(reply=lambda b: "I like this design.")
    eps = {"m": {"base_url": fs.base_url}, "j": {"base_url": fs.base_url, "structured": "json_schema", "max_concurrency": 1}}
    meta, d = run_bench("abgen", dict(model="m", judge="j", max_tokens=16), endpoints=eps)
    reason = meta["status_reason"]
    assert meta["status"] == "failed" and reason.startswith("stopped early: judge answers unparsable: 5 of the first 5 ")
    assert "--judge-structured llama" in reason and 'structured = "llama" in models.toml [models.j]' in reason
    assert "\n" not in reason
    recs = read_jsonl(d / "records.jsonl")                                       # records kept, every one with its reason
    assert len(recs) == meta["n"] == 8 and all(r["failure"] for r in recs)
    assert fs.calls < 8 + 8 * 4                                                  # the rest was never sent
    assert any("not sent: the run stopped early" in k for k in meta["failures_by_reason"])


def test_the_cli_builds_each_typed_config_once(cli, env, monkeypatch):
    "argv → a benchmark's typed config, built and validated once and handed to the run as it is (one, and `run all`)."
    from scibench.bench import Benchmark
    built, make = [], Benchmark.make_config
    monkeypatch.setattr(Benchmark, "make_config", lambda self, params=None: built.append(self.name) or make(self, params))
    name = next(iter(benchmarks()))
    r = cli("run", name, "--limit", "1", "--dry-run", env=env)
    assert r.returncode == 0, r.stderr
    assert built == [name]
    built.clear()
    r = cli("run", "all", "--limit", "1", "--dry-run", env=env)
    assert r.returncode == 0, r.stderr
    assert sorted(built) == sorted(benchmarks())   # one config a benchmark, for its plan and its run


def test_the_summary_counts_the_departures_printed_before_the_run(capsys):
    "A protocol's departures: its differences and its notes, each printed before the run and counted in the summary."
    import types
    from scibench.bench import note_protocol
    from scibench.run import summary_text
    p = dict(name="authors", prompts="authors", notes=["a"], quirks=["kept"], differences=["b", "c"])
    note_protocol(types.SimpleNamespace(protocol="authors"), types.SimpleNamespace(provenance={}), p)
    printed = len(capsys.readouterr().err.splitlines())
    meta = dict(bench="b", run_id="r", status="complete", config=dict(split="sample", model="m"),
                provenance=dict(protocol=p))
    assert printed == 3 and f"(prompts authors; {printed} departures listed in report.html)" in summary_text(meta)


def test_a_retired_list_parameter_loads_as_the_command_line_gives_it():
    "`-p types tf,mcq,...` equal to the retired value loads, as the list meta.json recorded does; another is refused."
    from scibench.bench import ConfigError
    b = get_benchmark("autobench")
    given = {k: ",".join(v) for k, v in b.retired.items() if isinstance(v, list)}
    assert given and b.make_config(given) == b.make_config({k: b.retired[k] for k in given}) == b.make_config({})
    with pytest.raises(ConfigError, match="is retired: runs now always use"):
        b.make_config({next(iter(given)): "tf"})
