"""Issue 20 through the shared layer: hostile result files, names, parameters and faults must give one clear line (or
be skipped and listed), never a traceback, a write outside results/, or a wrong status."""
import json, os, shutil, signal, subprocess, sys, time
from pathlib import Path
import pytest
from scibench.core import read_json, write_json

ROOT = Path(__file__).resolve().parent.parent
TALLY = {"tried": 0, "clear": 0}   # hostile inputs tried / answered with a clear error (or skipped and listed)


def clear_error(r, *needles, code=2):
    "One line on stderr, no traceback, exit `code`, naming every needle."
    TALLY["tried"] += 1
    lines = r.stderr.strip().splitlines()
    ok = r.returncode == code and "Traceback" not in r.stderr and len(lines) == 1 and all(n in r.stderr for n in needles)
    assert ok, (r.returncode, r.stderr[-3000:])
    TALLY["clear"] += 1
    return lines[0]


@pytest.fixture
def env(tmp_path, results):
    return {"SCIBENCH_RESULTS": str(results), "SCIBENCH_CACHE": str(tmp_path / "cache")}


def make_run(root: Path, model="m", run="20260101T000000000Z-aaaaaa", bench="abgen", records=None, meta=None,
             scores=None) -> Path:
    d = root / bench / "sample" / model / run
    d.mkdir(parents=True)
    m = dict(bench=bench, run_id=run, status="complete", config=dict(model=model, split="sample"), n=1, failures=0)
    (d / "meta.json").write_text(meta if isinstance(meta, str) else json.dumps(m))
    (d / "scores.json").write_text(scores if isinstance(scores, str) else "{}")
    recs = records if records is not None else json.dumps(dict(id="e1", failure=None, scores={"overall": 3})) + "\n"
    (d / "records.jsonl").write_text(recs)
    return d


# ----------------------------------------------------------------------------------------- item 3: bad result files
BAD_META = {
    "list": ("[]", "unreadable meta.json: expected a JSON object, got list"),
    "string": ('"x"', "unreadable meta.json: expected a JSON object, got str"),
    "status only": ('{"status": "complete"}', "unreadable meta.json: field 'bench': missing"),
    "usage of the wrong type": (json.dumps(dict(bench="abgen", status="complete", config=dict(model="m", split="sample"),
                                                usage=dict(total=dict(prompt_tokens="many")))),
                                "unreadable meta.json: field 'usage.total.prompt_tokens': expected a number"),
    "headline not a list": (json.dumps(dict(bench="abgen", status="complete", config=dict(model="m", split="sample"),
                                            headline={"a": 1})), "field 'headline': expected a list"),
    "not JSON": ("{nope", "unreadable meta.json:1: invalid JSON"),
}


GOOD_SCORES = sorted((ROOT / "results" / "abgen" / "sample" / "local").glob("*/scores.json"))[-1]


def test_bad_result_files_are_skipped_and_listed_never_fatal(cli, env, results):
    from scibench.bench import get_benchmark
    from scibench.runs import select_runs
    from scibench.view import index_html
    good = make_run(results, "good", scores=GOOD_SCORES.read_text())
    bad = {k: make_run(results, f"bad{i}", meta=m) for i, (k, (m, _)) in enumerate(BAD_META.items())}
    scores_list = make_run(results, "badscores", scores="[]")
    scores_empty = make_run(results, "emptyscores", scores="{}")      # an object, but not what the tables read
    (results / "abgen" / "sample" / "good" / "latest").mkdir()        # `latest` made a folder
    r = cli("runs", env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.count("unreadable") >= len(BAD_META), r.stdout
    for _, why in BAD_META.values():
        TALLY["tried"] += 1
        assert why.split(": field")[0] in r.stdout, (why, r.stdout)
        TALLY["clear"] += 1
    chosen, left = select_runs("abgen")
    assert good in chosen and not {*bad.values(), scores_list} & set(chosen), chosen
    left = dict(left)
    for k, d in bad.items():
        TALLY["tried"] += 1
        assert left[d] == BAD_META[k][1] or BAD_META[k][1] in left[d], (k, left[d])
        TALLY["clear"] += 1
    TALLY["tried"] += 1
    assert left[scores_list] == "unreadable scores.json: expected a JSON object, got list", left[scores_list]
    TALLY["clear"] += 1
    if isinstance(get_benchmark("abgen").tables, list):                # specs: each is tried on the run first
        TALLY["tried"] += 1
        assert left[scores_empty].startswith("table abgen_table2 cannot read it: KeyError"), left[scores_empty]
        TALLY["clear"] += 1
    page = index_html()                                                 # the results page lists them, and renders
    assert page.count(">unreadable<") == len(BAD_META)
    # view and compare: one line naming the file (and field), exit 2; a `latest` folder is read past
    clear_error(cli("view", "abgen/sample/bad0", env=env), "meta.json", "expected a JSON object")
    clear_error(cli("view", str(bad["not JSON"]), env=env), "meta.json:1", "invalid JSON")
    clear_error(cli("compare", "abgen/sample/good", str(bad["string"]), env=env), "meta.json", "got str")
    clear_error(cli("compare", "abgen/sample/good", str(scores_list), env=env), "scores.json", "expected a JSON object")
    rec = make_run(results, "badrecords", records="[1, 2, 3]\n")
    clear_error(cli("view", str(rec), env=env), "records.jsonl:1", "expected a JSON object")
    clear_error(cli("compare", "abgen/sample/good", str(rec), env=env), "records.jsonl:1")
    (good / "meta.json").write_bytes(b'{"bench": "abgen", "status": "\xff"}')      # unreadable: not UTF-8
    clear_error(cli("view", str(good), env=env), "meta.json:1", "not UTF-8")
    (good / "meta.json").write_text(json.dumps(dict(bench="abgen", status="complete", config=dict(model="good", split="sample"))))
    r = cli("view", "abgen/sample/good", env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith("report.html"), r.stderr


def test_tables_leave_a_bad_run_out_and_say_why(run_bench, fake_server, results, tmp_path, monkeypatch):
    from scibench.run import make_tables
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path / "fig"))
    fs = fake_server()
    _, d = run_bench("abgen", dict(model="m", judge="m", limit=2, max_tokens=16), endpoints={"m": {"base_url": fs.base_url}})
    broken = {}
    for name, f, text in (("s", "scores.json", "[]"), ("t", "meta.json", '{"status": "complete"}'), ("u", "meta.json", "[]")):
        b = results / "abgen" / "sample" / name / d.name
        shutil.copytree(d, b)
        (b / f).write_text(text)
        broken[name] = b
    make_tables(run_missing=False)
    t2 = (results / "tables" / "abgen_table2.md").read_text()
    assert d.name in t2
    runs = (results / "tables" / "runs.md").read_text()
    for name, why in (("s", "unreadable scores.json: expected a JSON object"), ("t", "unreadable meta.json: field 'bench': missing"),
                      ("u", "unreadable meta.json: expected a JSON object")):
        TALLY["tried"] += 1
        assert f"sample/{name}/{d.name}" in runs and why in runs, (name, runs)
        TALLY["clear"] += 1


# ----------------------------------------------------------------------------------------- item 5: names
@pytest.mark.parametrize("args, needle", [
    (["--model", ".."], "must not be '.' or '..'"),
    (["--model", "."], "must not be '.' or '..'"),
    (["--model", "a\nb"], "control characters"),
    (["--model", "m\r"], "control characters"),
    (["--model", ".tmp-x"], "must not start with '.'"),
    (["--model", "m", "--judge", "j\u2028k"], "control characters"),
    (["--model", "m", "--split", "../samples/abgen/sample"], "path separator"),
    (["--model", "m", "--split", ".."], "must not be '.' or '..'"),
    (["--model", "m", "--split", "a\tb"], "control characters"),
    (["--model", "m", "--split", "x" * 300], "longer than 200 bytes"),
])
def test_names_that_would_leave_their_folder_are_refused(cli, args, needle, env, results):
    "Without the check these reach the dead endpoint (exit 3) or write outside results/<bench>/<split>/<model>/."
    r = cli("run", "abgen", *args, "--base-url", "http://127.0.0.1:9/v1", "--judge-base-url", "http://127.0.0.1:9/v1",
            "--limit", "1", env=env)
    clear_error(r, needle, "it names a folder")
    assert not results.exists()


def test_run_parent_and_labels_stay_under_results(results):
    from scibench.bench import ConfigError
    from scibench.runs import run_parent
    from scibench.view import resolve_run
    assert run_parent("abgen", "sample", "org/model") == results / "abgen" / "sample" / "org%2Fmodel"
    for bad in (("abgen", "..", "m"), ("abgen", "sample", ".."), ("..", "sample", "m"), ("abgen", "a/b", "m")):
        TALLY["tried"] += 1
        with pytest.raises(ConfigError, match="names a folder"):
            run_parent(*bad)
        TALLY["clear"] += 1
    make_run(results.parent / "elsewhere" / "x", "m")                         # a run outside results/
    TALLY["tried"] += 1
    with pytest.raises(FileNotFoundError):
        resolve_run("abgen/sample/../../elsewhere/x")                          # a label never climbs out
    TALLY["clear"] += 1


# ----------------------------------------------------------------------------------------- item 7: bounds
DEAD = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--judge", "m", "--dry-run"]


@pytest.mark.parametrize("args, needle", [
    (["--timeout", "inf"], "--timeout for model must be a finite number"),
    (["--timeout", "nan"], "--timeout for model must be a finite number"),
    (["--timeout", "-1"], "--timeout for model must be between"),
    (["--timeout", "0"], "--timeout for model must be between"),
    (["--concurrency", "0"], "--concurrency for model must be between"),
    (["--concurrency", "-3"], "--concurrency for model must be between"),
    (["--max-failure-share", "5"], "--max-failure-share must be a number from 0 to 1"),
    (["--max-failure-share", "nan"], "--max-failure-share must be a number from 0 to 1"),
    (["--max-failure-share", "-1"], "--max-failure-share must be a number from 0 to 1"),
    (["-p", "temperature", "nan"], "parameter 'temperature' must be a finite number"),
    (["-p", "judge_temperature", "inf"], "parameter 'judge_temperature' must be a finite number"),
    (["-p", "limit", "-1"], "parameter 'limit' must be >= 0"),
])
def test_parameters_out_of_bounds_are_refused_before_anything(cli, args, needle, env, results):
    "Each was accepted: `--dry-run` planned it (exit 0), a real run then failed every request or ran with NaN."
    clear_error(cli("run", "abgen", *DEAD, *args, env=env), needle)
    assert not results.exists()


def test_param_bounds_are_checked_and_shown():
    from dataclasses import dataclass
    from scibench.bench import Config, ConfigError, describe, make_config, param, params_of, Benchmark, Paper
    from scibench.run import check_endpoint_value

    @dataclass
    class C(Config):
        cap: int = param(256, "a cap", min=1, max=1_000_000)
        share: float = param(0.5, "a share", min=0, max=1)
    for params, needle in (({"cap": "999999999999"}, "'cap' must be <= 1000000"), ({"cap": 0}, "'cap' must be >= 1"),
                           ({"cap": -5}, "'cap' must be >= 1"), ({"share": "nan"}, "finite"), ({"share": "-3"}, ">= 0")):
        TALLY["tried"] += 1
        with pytest.raises(ConfigError, match=needle):
            make_config(C, params)
        TALLY["clear"] += 1
    bounds = {p.name: p.bounds for p in params_of(C)}
    assert (bounds["limit"], bounds["cap"], bounds["share"]) == (">= 0", "1 to 1000000", "0 to 1")
    b = Benchmark("demo", "a demo", Paper("T", "A"), C, run=lambda cfg, ctx: [])
    assert "a cap [1 to 1000000]" in describe(b)
    with pytest.raises(ConfigError, match="finite"):
        check_endpoint_value("timeout", float("inf"), "--timeout")


def test_compare_top_must_not_be_negative(cli, tmp_path):
    a, b = make_run(tmp_path, "a"), make_run(tmp_path, "b")
    clear_error(cli("compare", str(a), str(b), "--top", "-1", env={"SCIBENCH_RESULTS": str(tmp_path)}), "--top must be")


# ----------------------------------------------------------------------------------------- item 8: clear errors
MODELS_TOML = [
    ("[models.m\n", "invalid TOML"),
    (b"[models.m]\nbase_url = \"http://h/v1\"\nmodel = \"\xff\"\n", "not UTF-8"),
    ("models = 3\n", "'models' must be a table"),
    ("[models]\nm = 3\n", "model 'm' must be a table"),
    ('[models.m]\nbase_url = "http://h/v1"\nmodel = "m"\nbogus = 1\n', "unknown field(s) ['bogus']"),
    ('[models.m]\nmodel = "m"\n', "field 'base_url' is missing"),
    ('[models.m]\nbase_url = "http://h/v1"\n', "field 'model' is missing"),
    ('[models.m]\nbase_url = "ftp://h/v1"\nmodel = "m"\n', "field 'base_url' must be an http(s) URL"),
    ('[models.m]\nbase_url = 5\nmodel = "m"\n', "field 'base_url' must be"),
    ('[models.m]\nbase_url = "http://h/v1"\nmodel = "m"\nmax_concurrency = "8"\n', "field 'max_concurrency' must be"),
    ('[models.m]\nbase_url = "http://h/v1"\nmodel = "m"\ntimeout = "soon"\n', "field 'timeout' must be"),
    ('[models.m]\nbase_url = "http://h/v1?key=abc"\nmodel = "m"\n', "has a query string or fragment"),
    ('[models.m]\nbase_url = "http://h/v1"\nmodel = "m"\ntimeout = inf\n', "timeout must be a finite number"),
]


@pytest.mark.parametrize("text, needle", MODELS_TOML)
def test_models_command_prints_the_one_line_error_that_run_prints(cli, text, needle, tmp_path, env):
    p = tmp_path / "models.toml"
    (p.write_bytes if isinstance(text, bytes) else p.write_text)(text)
    e = {**env, "SCIBENCH_MODELS": str(p)}
    line = clear_error(cli("models", env=e), needle)
    r = cli("run", "abgen", "--model", "m", "--judge", "m", "--dry-run", env=e)
    assert r.returncode == 2 and r.stderr.strip() == line, (line, r.stderr)


def test_compare_html_onto_a_folder_is_a_clear_error(cli, tmp_path):
    a, b = make_run(tmp_path, "a"), make_run(tmp_path, "b")
    (tmp_path / "out").mkdir()
    clear_error(cli("compare", str(a), str(b), "--html", str(tmp_path / "out"), env={"SCIBENCH_RESULTS": str(tmp_path)}),
                "is a folder")


def _wait_calls(fs, n, p=None, limit=120):
    t0 = time.time()
    while fs.calls < n and time.time() - t0 < limit and (p is None or p.poll() is None):
        time.sleep(0.05)
    assert fs.calls >= n, f"only {fs.calls} calls"


def _run_args(fs, model="m", limit=None):
    return ["run", "abgen", "--model", model, "--base-url", fs.base_url, "--judge", model, "--concurrency", "1",
            "-p", "max_tokens", "16", "--no-notebook", *(["--limit", str(limit)] if limit else [])]


def test_ctrl_c_of_a_run_piped_through_tee_ends_interrupted(env, results, fake_server, tmp_path):
    "Ctrl-C reaches the whole pipeline: `tee` dies, our next write to the pipe breaks; still `interrupted`, not failed."
    fs = fake_server(latency=0.4)
    line = " ".join(subprocess.list2cmdline([a]) for a in [sys.executable, "-m", "scibench.cli", *_run_args(fs)])
    p = subprocess.Popen(["bash", "-c", f"{line} 2>&1 | tee {tmp_path / 'log'} >/dev/null"], cwd=ROOT,
                         env={**os.environ, **env}, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_calls(fs, 5, p)
    os.killpg(p.pid, signal.SIGINT)
    p.wait(timeout=120)
    t0 = time.time()   # the pipeline ends with tee; scibench may still be writing its run folder
    while time.time() - t0 < 60 and not list((results / "abgen" / "sample" / "m").glob("2*/meta.json")):
        time.sleep(0.1)
    [d] = [d for d in (results / "abgen" / "sample" / "m").iterdir() if d.is_dir()]
    m = read_json(d / "meta.json")
    assert m["status"] == "interrupted", (m["status"], m["status_reason"])
    assert not (d / "error.txt").exists()


# ----------------------------------------------------------------------------------------- item 9: run folders
def test_a_live_run_is_running_a_killed_one_is_cleaned_up(cli, env, results, fake_server):
    fs = fake_server(latency=0.4)
    p = subprocess.Popen([sys.executable, "-m", "scibench.cli", *_run_args(fs)], cwd=ROOT, env={**os.environ, **env},
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_calls(fs, 3, p)
        r = cli("runs", env=env)
        assert r.returncode == 0 and f"running (pid {p.pid}" in r.stdout and "killed" not in r.stdout, r.stdout
    finally:
        p.kill()
        p.wait(timeout=60)
    parent = results / "abgen" / "sample" / "m"
    [tmp] = list(parent.glob(".tmp-*"))
    r = cli("runs", env=env)
    assert "killed (never finished)" in r.stdout and "running" not in r.stdout, r.stdout
    r = cli(*_run_args(fs, limit=1), env=env)                     # the next run of that model cleans up
    assert r.returncode == 0, r.stderr
    assert not tmp.exists() and not list(parent.glob(".tmp-*")) and "folder(s) of killed runs" in r.stderr
    assert not list(parent.glob("*/.owner")), "a finished run keeps no owner file"


def test_latest_names_the_newest_run_whichever_finished_last(run_bench, fake_server, results, monkeypatch):
    from scibench import run as run_mod
    from scibench.runs import new_run_id
    fs = fake_server()
    ep = {"m": {"base_url": fs.base_url}}
    started_later = "29991231T235959999Z-ffffff"                   # a run that started after the next one ...
    monkeypatch.setattr(run_mod, "new_run_id", lambda cd: started_later)
    run_bench("abgen", dict(model="m", judge="m", limit=1, max_tokens=16), endpoints=ep)
    monkeypatch.setattr(run_mod, "new_run_id", new_run_id)
    _, d = run_bench("abgen", dict(model="m", judge="m", limit=1, max_tokens=16), endpoints=ep)   # ... finished first
    assert d.name < started_later
    assert (results / "abgen" / "sample" / "m" / "latest").read_text().strip() == started_later


def test_latest_a_folder_or_garbage_is_read_past_and_never_crashes_a_run(tmp_path, capsys):
    from scibench.runs import read_latest, set_latest
    (tmp_path / "r1").mkdir()
    (tmp_path / "latest").mkdir()                                   # `latest` made a folder
    TALLY["tried"] += 1
    assert read_latest(tmp_path) is None and set_latest(tmp_path, "r1") is False
    assert "is not a file: not updated" in capsys.readouterr().err
    TALLY["clear"] += 1
    (tmp_path / "latest").rmdir()
    for junk in ("../../etc", "r1\nr2", "nosuch", "\xff"):
        TALLY["tried"] += 1
        (tmp_path / "latest").write_text(junk)
        assert read_latest(tmp_path) is None
        TALLY["clear"] += 1
    assert set_latest(tmp_path, "r1") and read_latest(tmp_path) == "r1"


# ----------------------------------------------------------------------------------------- item 10: base URLs
@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1?key=abc", "http://127.0.0.1:9/v1#x", "http://127.0.0.1:9/v1?"])
def test_a_base_url_with_a_query_string_is_refused(cli, url, env, results):
    clear_error(cli("run", "abgen", "--model", "m", "--base-url", url, "--judge", "m", "--dry-run", env=env),
                "has a query string or fragment")


# ----------------------------------------------------------------------------------------- item 12: interrupts
def test_interrupt_works_when_sigint_was_inherited_ignored(env, results, fake_server):
    "A background job of a script (`make test > log 2>&1 &`) starts with SIGINT ignored: the CLI installs its own."
    fs = fake_server(latency=0.4)
    p = subprocess.Popen([sys.executable, "-m", "scibench.cli", *_run_args(fs)], cwd=ROOT, env={**os.environ, **env},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    _wait_calls(fs, 5, p)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-2000:]
    [d] = [d for d in (results / "abgen" / "sample" / "m").iterdir() if d.is_dir()]
    assert read_json(d / "meta.json")["status"] == "interrupted"


# ----------------------------------------------------------------------------------------- retries (issue 20, 11)
def test_summary_and_report_show_retries_by_reason_when_usage_has_them(tmp_path):
    from scibench.run import summary_text
    from scibench.view import report_html
    meta = dict(bench="abgen", run_id="r1", status="complete", config=dict(model="m", split="sample"), n=1, failures=0,
                usage=dict(total=dict(requests=5, calls=5, retries={"timeout": 2, "http 429": 1})))
    assert "retries   3 (timeout 2, http 429 1)" in summary_text(meta)
    del meta["usage"]["total"]["retries"]
    assert "retries" not in summary_text(meta)
    d = make_run(tmp_path, "m")
    m = read_json(d / "meta.json")
    write_json(d / "meta.json", {**m, "usage": dict(total=dict(requests=5, retries={"timeout": 2}))})
    assert "<td>retries</td><td>2 (timeout 2)</td>" in report_html(d)
    write_json(d / "meta.json", {**m, "usage": dict(total=dict(requests=5))})
    assert "<td>retries</td>" not in report_html(d)


def test_zz_tally(capsys):
    with capsys.disabled():
        print(f"\nissue 20 (shared layer): hostile inputs tried {TALLY['tried']} / clear errors {TALLY['clear']}")
