"""Issue 21 item 5, the harness features researchers expect: `--ids`, `--seed`, `scibench retry RUN`, `scibench cite`.
Everything runs against the fake server (no model)."""
import pytest
from scibench.bench import ConfigError, Paper, benchmarks, get_benchmark
from scibench.core import read_json, read_jsonl

FAST = {"max_tokens": 16, "judge_max_tokens": 64}


def _adhoc(fs, **kw):
    "Params and ad-hoc endpoints of an abgen run whose model and judge are the fake server (its replies are text)."
    return {"model": "m", "judge": "j", **FAST, **kw}, {n: {"base_url": fs.base_url, "structured": "none"} for n in ("m", "j")}


def test_ids_run_only_those_items_in_the_split_order(run_bench, fake_server):
    fs = fake_server()
    params, eps = _adhoc(fs, ids="abgen-sample-005,abgen-sample-002")
    meta, d = run_bench("abgen", params, endpoints=eps)
    ids = [r["example_id"] for r in read_jsonl(d / "records.jsonl")]
    assert meta["status"] == "complete" and ids == ["abgen-sample-002", "abgen-sample-005"]
    assert read_json(d / "meta.json")["config"]["ids"] == ["abgen-sample-005", "abgen-sample-002"]
    assert fs.calls == 2 * 5   # one generation and four judge calls per item, nothing else


@pytest.mark.parametrize("bench", ["abgen", "abgen_eval", "rubrics", "autobench", "arxivbench"])
def test_an_unknown_id_is_a_config_error_naming_it_before_any_call(run_bench, fake_server, bench):
    fs = fake_server()
    b = get_benchmark(bench)
    params = {"ids": "no-such-item"}
    eps = {}
    for q in b.roles():
        name = f"x{q.name}"
        params[q.name] = name
        eps[name] = {"base_url": fs.base_url}
    with pytest.raises(ConfigError, match="'no-such-item'"):
        run_bench(bench, params, endpoints=eps, dry_run=True)
    assert fs.calls == 0


def test_ids_with_limit_is_refused(run_bench):
    with pytest.raises(ConfigError, match="--ids and --limit"):
        run_bench("abgen", {"ids": "abgen-sample-001", "limit": 1}, dry_run=True)


def test_seed_is_sent_with_every_request_and_recorded_and_absent_changes_nothing(run_bench, fake_server):
    seen = []

    def reply(body):
        seen.append(body.get("seed"))
        return "Rationale: ok. Therefore, the score is: 4"

    fs = fake_server(reply=reply)
    params, eps = _adhoc(fs, limit=1)
    run_bench("abgen", params, endpoints=eps)
    assert set(seen) == {None}, "no --seed: every request as before (under authors: no seed, as theirs)"
    seen.clear()
    meta, d = run_bench("abgen", {**params, "seed": 7}, endpoints=eps)
    assert set(seen) == {7} and len(seen) == 5, "a new seed: new requests, each sent with it"
    assert read_json(d / "meta.json")["config"]["seed"] == 7
    seen.clear()
    run_bench("abgen", params, endpoints=eps)
    assert seen == [], "the run without --seed again: every answer from the cache"


def test_retry_sends_only_the_failed_items_requests(run_bench, fake_server):
    "Done-when of issue 21: the second item's generation fails (HTTP 400); retry sends its requests and no other."
    from scibench.run import retry

    bad = "ablation study about Contrastive loss"   # in abgen-sample-002's generation prompt only
    prompts = []

    def reply(body):
        prompts.append(" ".join(m["content"] for m in body["messages"]))
        return "Rationale: ok. Therefore, the score is: 4"

    fs = fake_server(reply=reply, permanent=bad)
    params, eps = _adhoc(fs, limit=3)
    meta, d = run_bench("abgen", params, endpoints=eps)
    fails = [r["example_id"] for r in read_jsonl(d / "records.jsonl") if r.get("failure")]
    assert meta["status"] == "partial" and fails == ["abgen-sample-002"], fails
    assert len(prompts) == 2 * 5 and not any(bad in p for p in prompts)
    fs.permanent = None   # the endpoint recovers
    prompts.clear()
    m2 = retry(d, eps, notebook=False, progress=False)   # a recorded ad-hoc endpoint is used only when given again
    assert m2["status"] == "complete" and m2["n"] == 3 and m2["failures"] == 0
    assert len(prompts) == 5 and all(bad in p for p in prompts[:1]), "only the failed item: its generation + 4 judges"
    assert m2["usage"]["total"]["cached"] == 10
    m = read_json(m2["dir"] / "meta.json")
    assert m["retry_of"].endswith(d.name) and m["config"] == read_json(d / "meta.json")["config"]


def test_cite_every_benchmark_prints_bibtex_from_the_paper(capsys):
    from scibench.cli import _main

    for name, b in benchmarks().items():
        assert _main(["cite", name]) in (0, None)
        out = capsys.readouterr().out
        assert out.startswith("@") and f"title = {{{b.paper.title}}}" in out and out.rstrip().endswith("}")
    auto = get_benchmark("autobench").paper.bibtex()
    assert "booktitle = {ACL 2025}" in auto and "no arXiv id" in auto and "author =" not in auto
    assert "no arXiv id" in get_benchmark("rubrics").paper.bibtex()
    assert Paper("T", "A").bibtex().startswith("@misc{t,")


def test_cli_unknown_id_exits_2_naming_it_and_help_shows_the_flags(tmp_path, results):
    import os, subprocess, sys
    env = {**os.environ, "SCIBENCH_RESULTS": str(results), "SCIBENCH_CACHE": str(tmp_path / "cache")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "scibench.cli", *a], capture_output=True, text=True, env=env)
    r = run("run", "abgen", "--ids", "abgen-sample-001,nope", "--dry-run")
    assert r.returncode == 2 and "'nope'" in r.stderr and "abgen-sample-001" not in r.stderr.split("(ids:")[0], r.stderr
    h = run("run", "abgen", "--help").stdout
    assert "--ids ID,ID" in h and "--seed N" in h
    r = run("retry", "abgen/sample/nobody")
    assert r.returncode == 2, r.stderr


def _cap(body):
    return body.get("max_completion_tokens", body.get("max_tokens"))


def _seeded_reply(seen):
    """A fake server's reply that records every body: one generation for every request (so the judges' prompts are the
    same), a judge score of 4 in the first four judge calls (epoch 0) and 2 in any later one (the epochs' scores
    differ; under `protocol=authors` the requests carry no seed, so epochs differ only in their sample index)."""
    def reply(body):
        seen.append(body)
        if _cap(body) == FAST["max_tokens"]:
            return "Remove the filter and compare."
        judged = sum(_cap(b) != FAST["max_tokens"] for b in seen)
        return f"Rationale: ok. Therefore, the score is: {4 if judged <= 4 else 2}"
    return reply


def test_epochs_send_every_request_again_with_only_the_seed_shifted_and_report_mean_and_ci(run_bench, fake_server):
    import json
    from scibench.run import EPOCH_STRIDE, summary_text
    seen = []
    fs = fake_server(reply=_seeded_reply(seen))
    params, eps = _adhoc(fs, limit=1)
    meta, d = run_bench("abgen", params, endpoints=eps, epochs=2)
    assert meta["status"] == "complete" and fs.calls == 2 * 5, (meta["status_reason"], fs.calls)
    from collections import Counter
    bodies = Counter(json.dumps(b, sort_keys=True) for b in seen)
    assert len(bodies) == 5 and set(bodies.values()) == {2} and not any("seed" in b for b in seen), \
        "the same requests again (their sample index, not sent, keeps them apart in the cache)"
    assert EPOCH_STRIDE > 0
    assert (d / "records.jsonl").exists() and (d / "epochs" / "1" / "records.jsonl").exists()
    m = read_json(d / "meta.json")
    ep = m["epochs"]
    assert ep["k"] == 2 and [p["dir"] for p in ep["per_epoch"]] == [".", "epochs/1"]
    assert m["n"] == sum(p["n"] for p in ep["per_epoch"]) == 2 and m["usage"]["total"]["calls"] == 10
    h = m["headline"][0]
    per = [next(x["value"] for x in p["headline"] if x["name"] == h["name"]) for p in ep["per_epoch"]]
    assert per[0] != per[1] and abs(h["value"] - sum(per) / 2) < 1e-9
    assert h["lo"] is None and h["hi"] is None, "no t-interval over 2 values (1 degree of freedom)"
    s = summary_text({**m, "dir": d})
    assert "mean of 2 epochs" in s and "[" not in s.split("mean of 2 epochs")[0].splitlines()[-1], s
    assert "none below 3 epochs" in s, s
    from scibench.runs import settings
    assert "epochs=2" in settings(d)
    fs_calls = fs.calls
    run_bench("abgen", params, endpoints=eps, epochs=2)
    assert fs.calls == fs_calls, "the same run again: every epoch's answers from the cache"


def test_one_epoch_is_the_run_as_before(run_bench, fake_server):
    from scibench.core import project_root
    seen = []
    fs = fake_server(reply=_seeded_reply(seen))
    params, eps = _adhoc(fs, limit=1)
    m0, d0 = run_bench("abgen", params, endpoints=eps)
    m1, d1 = run_bench("abgen", params, endpoints=eps, epochs=1)
    assert fs.calls == 5 and not any("seed" in b for b in seen), "epochs=1: no request of its own"
    parent = project_root() / "results" / "abgen" / "sample" / "local"
    committed = read_json(parent / (parent / "latest").read_text().strip() / "meta.json")
    for d in (d0, d1):
        keys = [k for k in read_json(d / "meta.json") if k != "served"]   # the fake server serves 'fake', not 'm'
        assert keys == list(committed) and not (d / "epochs").exists()
    assert (d0 / "scores.json").read_bytes() == (d1 / "scores.json").read_bytes()


def test_dry_run_plans_k_times_the_calls_and_stub_runs_once_for_requests(run_bench, fake_server, tmp_path,
                                                                        monkeypatch):
    import scibench.run as R
    fs = fake_server()
    params, eps = _adhoc(fs, limit=2)
    one, _ = run_bench("abgen", params, endpoints=eps, dry_run=True)
    three, _ = run_bench("abgen", params, endpoints=eps, dry_run=True, epochs=3)
    assert [r["calls"] * 3 for r in one["plan"]] == [r["calls"] for r in three["plan"]] and one["plan"][0]["calls"]
    assert three["epochs"] == {"k": 3} and "epochs" not in one and fs.calls == 0
    runs, stub = [], R.stub_run
    monkeypatch.setattr(R, "stub_run", lambda *a, **k: runs.append(1) or stub(*a, **k))
    m, _ = run_bench("abgen", params, endpoints=eps, dry_run=True, requests=tmp_path / "r.jsonl")
    assert len(runs) == 1 and sum(m["requests"]["counts"].values()) == 2, (runs, m["requests"])
    assert [r["calls"] for r in m["plan"]] == [r["calls"] for r in one["plan"]]


def test_epochs_count_every_epochs_failures(run_bench, fake_server):
    "abgen-sample-002's generation fails (HTTP 400) in every epoch: both failures are counted, none dropped."
    fs = fake_server(reply=lambda body: "Rationale: ok. Therefore, the score is: 4",
                     permanent="ablation study about Contrastive loss")
    params, eps = _adhoc(fs, limit=3)
    meta, d = run_bench("abgen", params, endpoints=eps, epochs=2)
    m = read_json(d / "meta.json")
    assert m["status"] == "partial" and m["status_reason"].startswith("epoch 0: 1 of 3 items failed"), m["status_reason"]
    assert (m["n"], m["failures"], sum(m["failures_by_reason"].values())) == (6, 2, 2)
    assert [p["failures"] for p in m["epochs"]["per_epoch"]] == [1, 1]
    assert [r["example_id"] for r in read_jsonl(d / "epochs" / "1" / "records.jsonl") if r.get("failure")] == [
        "abgen-sample-002"]


@pytest.mark.parametrize("k", ["0", "-1", "1001", "two"])
def test_cli_bad_epochs_exit_2_before_any_call(cli, results, fake_server, k):
    fs = fake_server()
    r = cli("run", "abgen", "--model", "m", "--base-url", fs.base_url, "--judge", "m", "--limit", "1",
            "--epochs", k)
    assert r.returncode == 2 and "--epochs" in r.stderr and fs.calls == 0, (r.returncode, r.stderr)
    assert not list(results.glob("abgen/*/*/*"))
    assert "--epochs K" in cli("run", "abgen", "--help").stdout
