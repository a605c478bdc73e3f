"""Issue 21 item 5, the harness features researchers expect: `--ids`, `--seed`, `scibench retry RUN`, `scibench cite`.
Everything runs against the fake server (no model)."""
import pytest
from scibench.bench import ConfigError, Paper, benchmarks, get_benchmark
from scibench.core import read_json, read_jsonl

FAST = {"max_tokens": 16, "judge_max_tokens": 64}


def _adhoc(fs, **kw):
    "Params and ad-hoc endpoints of an abgen run whose model and judge are the fake server."
    return {"model": "m", "judge": "j", **FAST, **kw}, {n: {"base_url": fs.base_url} for n in ("m", "j")}


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
    assert set(seen) == {0}, "no --seed: every request as before (seed = sample index 0)"
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
    m2 = retry(d, notebook=False, progress=False)
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
