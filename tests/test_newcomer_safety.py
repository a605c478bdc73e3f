"""A newcomer's mistakes answered in one line with their fix before anything is written, and nothing of theirs leaves
or crashes: endpoint forms, retry of a foreign run folder, corrupt run files, model names, bounds. Fake server only."""
import json
import os
import pytest

FAST = ["--limit", "1", "--max-tokens", "16", "--judge-max-tokens", "64", "--no-notebook"]


def _run(cli, fs, base, *more):
    return cli("run", "abgen", "--model", "m", "--judge", "m", "--base-url", base, *FAST, *more)


@pytest.mark.parametrize("form", ["root", "chat"])
def test_a_wrong_base_url_form_stops_at_preflight_naming_the_url_to_use(cli, fake_server, results, form):
    fs = fake_server()
    v1 = fs.base_url.rstrip("/")
    base = v1.removesuffix("/v1") if form == "root" else v1 + "/chat/completions"
    r = _run(cli, fs, base)
    assert r.returncode == 3 and f"use the base URL {v1}" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) <= 5 and "Traceback" not in r.stderr
    assert fs.calls == 0 and not list(results.rglob("meta.json")), "nothing sent, no run folder"


def _adhoc_run(cli, fs, *more):
    "An ad-hoc run (model and judge 'm' at the fake server) → its run folder."
    r = _run(cli, fs, fs.base_url, *more)
    assert r.returncode == 0, r.stderr
    return r


def _only_run(results):
    (m,) = results.rglob("meta.json")
    return m.parent


def test_retry_of_a_foreign_endpoint_refuses_naming_the_option_and_sends_nothing(cli, fake_server, results):
    fs = fake_server()
    _adhoc_run(cli, fs)
    d, sent = _only_run(results), fs.calls
    r = cli("retry", d, env={"SCIBENCH_CANARY_KEY": "sk-canary-123"})
    assert r.returncode == 2 and "--base-url URL" in r.stderr and "meta.json" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and fs.calls == sent, "one line, not one request"
    # the endpoint given again: the retry runs, says what it retries, takes the endpoint options
    r = cli("retry", d, "--base-url", fs.base_url, "--timeout", "30", "--concurrency", "2")
    assert r.returncode == 0 and f"retry of {d}" in r.stderr, r.stderr
    assert cli("retry", d, "--base-url", fs.base_url, "--timeout", "0").returncode == 2


@pytest.mark.parametrize("meta", ["{", "[]", '{"bench": 3}', '{"bench": "abgen", "status": "complete"}',
                                  '{"bench": "nope", "status": "complete", "config": {"model": "m", "split": "s"}}'])
def test_retry_of_a_corrupt_meta_json_is_one_line_naming_the_file(cli, results, meta):
    d = results / "abgen" / "sample" / "m" / "20260101T000000000Z-abcdef"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(meta)
    r = cli("retry", d)
    assert r.returncode == 2 and f"{d}/meta.json" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_an_unknown_split_lists_the_splits_there_are(cli, own_data, results):
    d = own_data("abgen")
    (d / "abgen").mkdir()
    (d / "abgen" / "test.jsonl").write_text("")
    r = cli("run", "abgen", "--split", "tset", "--dry-run")
    assert r.returncode == 2 and "did you mean 'test'?" in r.stderr and "splits here: sample, test;" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, needle", [(["--ids", ","], "expects list"), (["--seed", "99999999999"], "'seed' must be <="),
                                          (["--model", " m "], None)])
def test_lists_ints_and_names_are_checked_before_anything_runs(cli, results, args, needle):
    r = cli("run", "abgen", *args, "--dry-run")
    if needle:
        assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    else:  # a name's edge spaces are no part of it: an unknown model 'm', named without them
        assert r.returncode == 2 and "unknown model 'm'" in r.stderr, r.stderr


def test_eight_thousand_unknown_ids_give_a_short_message(cli, results):
    r = cli("run", "abgen", "--ids", ",".join(f"x{i}" for i in range(8000)), "--dry-run")
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and "and 7995 more" in last and len(last) < 300, r.stderr[:500]


def test_models_a_slash_b_and_a_underscore_b_get_two_folders_both_in_the_tables(cli, fake_server, results):
    fs = fake_server()
    for name in ("a/b", "a_b"):
        r = cli("run", "abgen", "--model", name, "--judge", name, "--base-url", fs.base_url, *FAST)
        assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (results / "abgen" / "sample").iterdir()) == ["a%2Fb", "a_b"]
    from scibench.runs import select_runs
    chosen, _ = select_runs("abgen")
    assert len(chosen) == 2


def test_a_llama_cpp_server_gets_the_concurrency_of_its_slots_unless_one_is_given(cli, fake_server, results):
    import json
    fs = fake_server(slots=1)
    r = _run(cli, fs, fs.base_url)
    assert r.returncode == 0 and "1 slot(s): 1 request(s) at once" in r.stderr, r.stderr
    metas = [json.loads(p.read_text()) for p in results.rglob("meta.json")]
    assert [m["models"]["m"]["max_concurrency"] for m in metas] == [1]
    r = _run(cli, fs, fs.base_url, "--concurrency", "3", "--refresh")
    assert r.returncode == 0 and "slot(s)" not in r.stderr, r.stderr
    assert sorted(json.loads(p.read_text())["models"]["m"]["max_concurrency"] for p in results.rglob("meta.json")) == [1, 3]


def test_a_served_id_other_than_the_name_is_recorded_and_reported_and_a_judge_that_is_the_model_said(cli, fake_server,
                                                                                                    results):
    import json
    fs = fake_server()   # serves one model, 'fake'
    r = cli("run", "abgen", "--model", "fake", "--judge", "my-judge", "--base-url", fs.base_url, "--judge-base-url",
            fs.base_url, *FAST)
    assert r.returncode == 0, r.stderr
    d = _only_run(results)
    note = json.loads((d / "meta.json").read_text())["served"]["my-judge"]["note"]
    assert "serves fake, not 'my-judge'" in note and "the judge is the model under test ('fake'" in note
    assert note in r.stdout and "the judge is the model under test" in (d / "report.html").read_text()


def test_an_unknown_make_variable_is_named_before_anything_runs():
    import subprocess
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # as typed, not from make
    r = subprocess.run(["make", "-n", "run", "LIMT=2"], cwd=root, capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "unknown variable LIMT;" in r.stderr and "LIMIT" in r.stderr and not r.stdout, r
    assert subprocess.run(["make", "-n", "run", "LIMIT=2"], cwd=root, capture_output=True).returncode == 0


def _notebook_header(run):
    "The run notebook's first code cells, run on folder `run` as papermill would (its parameters cell, then the next)."
    from pathlib import Path
    nb = json.loads((Path(__file__).resolve().parent.parent / "nbs" / "runs" / "run.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][1]
    exec("".join(code["source"]), {"run": str(run)})


@pytest.mark.parametrize("meta, records, needle", [
    ('{"bench": "abgen"}', "", "meta.json: field 'status'"), ("{", "", "meta.json:1: invalid JSON"),
    ('{"bench": "abgen", "status": "complete", "config": {"model": "m", "split": "sample"}}', "[1]\n",
     "records.jsonl:1: expected a JSON object")])
def test_a_corrupt_run_file_is_one_line_in_the_run_notebook_view_and_compare(cli, results, meta, records, needle):
    d = results / "abgen" / "sample" / "m" / "20260101T000000000Z-abcdef"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(meta)
    (d / "records.jsonl").write_text(records)
    with pytest.raises(SystemExit, match=needle):
        _notebook_header(d)
    for args in (["view", d], ["compare", d, d]):   # no status: they read what they can
        r = cli(*args)
        one = r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert one or (r.returncode == 0 and "field 'status'" in needle and not r.stderr), r.stderr
    r = cli("runs")
    assert r.returncode == 0 and ("unreadable" in r.stdout or "complete" in r.stdout), r


def test_a_retry_never_uses_the_key_variable_a_run_folder_names(cli, fake_server, results):
    "Given the base URL again, the retry still sends no key the folder's meta.json names (--api-key-env to send one)."
    fs = fake_server()
    key = {"SCIBENCH_CANARY_KEY": "sk-canary-123"}
    r = cli("run", "abgen", "--model", "m", "--judge", "m", "--base-url", fs.base_url, "--api-key-env",
            "SCIBENCH_CANARY_KEY", *FAST, env=key)
    assert r.returncode == 0, r.stderr
    assert any("sk-canary-123" in h.get("authorization", "") for h in fs.headers_seen)
    fs.headers_seen.clear()
    r = cli("retry", _only_run(results), "--base-url", fs.base_url, env=key)
    assert r.returncode == 0, r.stderr
    assert fs.headers_seen and not any("sk-canary" in str(h) for h in fs.headers_seen)
