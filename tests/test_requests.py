"`scibench run BENCH --dry-run --requests FILE`: every first-stage request, as the client would POST it, and no call made."
import json
import pytest
from scibench.benchmarks.arxivbench import method as arxivbench
from scibench.benchmarks.autobench import method as autobench
from scibench.benchmarks.autobench import data as autobench_data
from scibench.benchmarks.rubrics import method as rubrics
from scibench.bench import get_benchmark
from scibench.cli import main

CLOSED = ["--base-url", "http://127.0.0.1:9/v1"]   # nothing listens there: a dry run must not contact it


def cli(*argv) -> int:
    with pytest.raises(SystemExit) as e: main(list(argv))
    return e.value.code


def lines(p):
    return [json.loads(l) for l in p.read_text(encoding="utf-8").splitlines()]


def test_arxivbench_requests_are_the_authors_query(tmp_path, results, capsys):
    f = tmp_path / "req.jsonl"
    assert cli("run", "arxivbench", "--model", "x", *CLOSED, "--judge", "x", "--judge-base-url", "http://127.0.0.1:9/v1",
               "--protocol", "authors", "--max-tokens", "321", "--dry-run", "--requests", str(f)) == 0
    prompts = arxivbench.load_prompts("sample")
    ls = lines(f)
    assert len(ls) == len(prompts)
    first = ls[0]
    assert (first["role"], first["model"], first["served_model"]) == ("model", "x", "x")
    assert first["body"]["messages"] == [{"role": "system", "content": prompts[0]["prompt"]},
                                         {"role": "user", "content": arxivbench.AUTHORS_QUERY}]
    assert first["body"]["temperature"] == 0.0 and first["body"]["max_tokens"] == 321 and first["body"]["model"] == "x"
    assert "api_key" not in json.dumps(first).lower()
    assert f"wrote {len(prompts)} request(s)" in capsys.readouterr().out
    assert not results.exists(), "a dry run writes no run folder"


def test_requests_refuses_an_existing_file_and_needs_dry_run(tmp_path, results, capsys):
    f = tmp_path / "req.jsonl"; f.write_text("mine\n")
    base = ["run", "arxivbench", "--model", "x", *CLOSED, "--judge", "x", "--judge-base-url", "http://127.0.0.1:9/v1"]
    assert cli(*base, "--dry-run", "--requests", str(f)) == 2
    assert str(f) in capsys.readouterr().err and f.read_text() == "mine\n"
    g = tmp_path / "new.jsonl"
    assert cli(*base, "--requests", str(g)) == 2
    assert "--dry-run" in capsys.readouterr().err and not g.exists() and not results.exists()


def test_a_benchmark_without_requests_is_named(tmp_path, monkeypatch, capsys):
    import dataclasses
    from scibench import bench
    b = get_benchmark("arxivbench")
    monkeypatch.setitem(bench.REGISTRY, "arxivbench", dataclasses.replace(b, stages=[]))
    assert cli("run", "arxivbench", "--model", "x", *CLOSED, "--judge", "x", "--judge-base-url", "http://127.0.0.1:9/v1",
               "--dry-run", "--requests", str(tmp_path / "r.jsonl")) == 2
    assert "'arxivbench' does not declare its requests" in capsys.readouterr().err


def test_rubrics_requests_are_the_first_call_of_each_setting_and_paper(tmp_path, results):
    f = tmp_path / "req.jsonl"
    assert cli("run", "rubrics", "--model", "x", *CLOSED, "--judge", "x", "--judge-base-url", "http://127.0.0.1:9/v1",
               "--settings", "direct,icl,agentic", "--dry-run", "--requests", str(f)) == 0
    papers = rubrics.load_papers("sample")
    from scibench.run import derive_plan
    plan = {r["role"]: r["calls"] for r in derive_plan(get_benchmark("rubrics"), rubrics.RubricsConfig(settings=["direct", "icl"]))}
    ls = lines(f)
    assert len(ls) == 3 * len(papers) and plan["model"] == 2 * len(papers)   # direct and icl: one call each, planned so
    assert all(l["body"]["messages"] and l["role"] == "model" for l in ls)
    assert ls[0]["body"]["messages"][-1]["content"] == rubrics.direct_prompt(papers[0])
    assert ls[-1]["body"]["messages"][0]["role"] == "system"      # the agent's first turn: system + task


def test_autobench_requests_are_the_extraction_windows(tmp_path, results):
    f = tmp_path / "req.jsonl"
    assert cli("run", "autobench", "--model", "x", *CLOSED, "--judge", "x", "--judge-base-url", "http://127.0.0.1:9/v1",
               "--dry-run", "--requests", str(f)) == 0
    cfg = autobench.AutoBenchConfig(judge="x")
    planned = sum(len(autobench.paper_windows(p, cfg.window_size, cfg.window_stride, cfg.max_windows)) for p in autobench_data.load_split("sample")[0])
    ls = lines(f)
    assert len(ls) == planned and all(l["body"]["messages"] for l in ls)
    assert ls[0]["body"]["max_tokens"] == cfg.extract_max_tokens
