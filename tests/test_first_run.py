"""The README's first run: `make run BENCH=abgen MODEL=local` takes the embedded model's preset (the committed run's
parameters), prints its estimate before it starts, and ends `complete`; `run all` takes per-benchmark parameters."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from scibench.bench import ConfigError, get_benchmark
from scibench.run import execute, execute_all

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "results/abgen/sample/local/20261201T102418637Z-acdecf/meta.json"


def test_the_first_run_is_the_committed_run(capsys):
    meta = execute("abgen", {"model": "local"}, dry_run=True)
    retired = get_benchmark("abgen").retired   # parameters cut since, at the value runs now always use
    committed = {k: v for k, v in json.loads(COMMITTED.read_text())["config"].items() if retired.get(k, object()) != v}
    assert {**meta["config"], **committed} == meta["config"], "the committed run's config: its requests, its cache keys"
    assert {k: v for k, v in meta["config"].items() if k not in committed} == {"ids": [], "seed": 0, "authors_path": "api"}  # added later
    assert meta["preset"] == dict(name="small", source="models.toml 'local'",
                                  params=dict(max_tokens=256, judge_max_tokens=160, max_rationale=200))
    assert "preset         small (models.toml 'local'): max_tokens=256" in capsys.readouterr().err


def test_a_given_value_wins_and_preset_none_turns_it_off():
    m = execute("abgen", {"model": "local", "judge_max_tokens": 200}, dry_run=True)
    assert m["config"]["judge_max_tokens"] == 200 and m["config"]["max_rationale"] == 200
    m = execute("abgen", {"model": "local"}, dry_run=True, preset="none")
    assert "preset" not in m and m["config"]["max_rationale"] == 0 and m["config"]["judge_max_tokens"] == 256  # capped


def test_run_all_takes_a_value_per_benchmark():
    res = execute_all({"model": "local", "limit": 1, "abgen.judge_max_tokens": 100, "rubrics.settings": "direct"},
                      dry_run=True)
    by = {m["bench"]: m["config"] for m in res["runs"]}
    assert by["abgen"]["judge_max_tokens"] == 100 and by["abgen_eval"]["judge_max_tokens"] == 100  # its preset's
    assert by["rubrics"]["settings"] == ["direct"] or by["rubrics"]["settings"] == "direct"
    with pytest.raises(ConfigError, match="no benchmark 'abgn'"):
        execute_all({"model": "local", "abgn.limit": 1}, dry_run=True)
    with pytest.raises(ConfigError, match="unknown parameter 'nosuch' for abgen"):
        execute_all({"model": "local", "abgen.nosuch": 1}, dry_run=True)


@pytest.mark.slow
def test_the_readme_first_run_ends_complete(tmp_path):
    "The real embedded model, the README's first command (what `make run BENCH=abgen MODEL=local` runs): minutes."
    env = {**os.environ, "SCIBENCH_RESULTS": str(tmp_path / "results"), "SCIBENCH_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "scibench.cli", "run", "abgen", "--model", "local", "--split", "sample",
                        "--no-notebook"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "status    complete" in r.stdout, r.stdout
    assert "  estimate       40 calls" in r.stderr, "the estimate, printed before the run starts"
