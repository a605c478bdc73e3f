"""Issue 21 item 4: `scibench run all` runs every benchmark for one model: one plan, one summary, each benchmark's own
run folder, the worst exit code. Against the fake server (and the embedded model's registry entry, never called)."""
from pathlib import Path
import pytest
from scibench.bench import benchmarks
from scibench.core import read_json

ROOT = Path(__file__).resolve().parent.parent
FIVE = {"abgen", "abgen_eval", "arxivbench", "rubrics", "autobench", "citeme"}
CODES = {"complete": 0, "partial": 1, "failed": 1}




@pytest.fixture
def env(tmp_path, results):
    return {"SCIBENCH_RESULTS": str(results), "SCIBENCH_CACHE": str(tmp_path / "cache")}


def _table(out: str) -> list[list[str]]:
    "The rows of the first table in `out` whose header starts with `bench` (up to its `total` line or a blank one)."
    lines = out.splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith("bench "))
    rows = []
    for l in lines[i + 1:]:
        if not l.strip() or l.split()[0] in ("total", "not", "exit", "caps", "note:"):
            break
        rows.append(l.split())
    return rows


def test_registry_is_the_five():
    assert set(benchmarks()) == FIVE   # `run all` runs what is registered: this list is what the tests below expect


def test_dry_run_plans_all_five_in_one_table(cli, env, results):
    r = cli("run", "all", "--model", "local", "--limit", "1", "--dry-run", "-p", "judge_max_tokens", "64",
            "--preset", "none", env=env)   # the caps alone (the embedded model's preset tested below)
    assert r.returncode == 0, r.stderr
    rows = _table(r.stdout)
    assert {x[0] for x in rows if x[0] in FIVE} == FIVE, r.stdout
    assert r.stdout.count("\nbench ") + r.stdout.startswith("bench ") <= 1      # one plan table, not five
    assert "total" in r.stdout and "not applicable: parameter 'judge_max_tokens' to autobench, citeme" in r.stdout
    # the embedded model's cap (models.toml max_tokens 256) lowers the defaults above it; a given value is kept
    assert "caps (rubrics): models.toml max_tokens caps max_tokens 256 (default 8192, 'local')" in r.stdout
    assert "caps (abgen): models.toml max_tokens caps max_tokens 256" in r.stdout
    assert "judge_max_tokens 256" not in r.stdout.split("caps (abgen):")[1].splitlines()[0]
    assert not results.exists()                                                    # a plan writes nothing
    r = cli("run", "all", "--model", "local", "--limit", "1", "--dry-run", "-p", "abgen.judge_max_tokens", "64",
            env=env)
    assert r.returncode == 0, r.stderr
    assert "preset (rubrics): small (models.toml 'local'): settings=direct,icl,agentic,skill k=3" in r.stdout
    assert "preset (abgen): small (models.toml 'local'): max_tokens=256 max_rationale=200" in r.stdout, r.stdout


def test_bad_input_exits_2_before_anything(cli, env, results):
    for args, needle in ((["-p", "max_token", "5"], "unknown parameter 'max_token' for every benchmark"),
                         (["--model", "nope"], "unknown model 'nope'")):
        r = cli("run", "all", *args, "--dry-run", env=env)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    from scibench.bench import ConfigError
    from scibench.run import execute_all
    with pytest.raises(ConfigError, match="'limit' must be >= 0"):
        execute_all({"limit": -1}, dry_run=True)
    with pytest.raises(ConfigError, match="endpoint options given for x, which no benchmark's role uses"):
        execute_all({}, {"x": {"base_url": "http://127.0.0.1:9/v1"}}, dry_run=True)
    with pytest.raises(ConfigError, match="--requests is for one benchmark"):
        execute_all({}, dry_run=True, requests="r.jsonl")
    assert not results.exists()


def test_run_all_against_the_fake_server(cli, fake_server, env, results):
    "--limit 1 on every benchmark: each writes its own run folder, one summary lists them, the exit code is the worst."
    fs = fake_server(structured="llama")
    r = cli("run", "all", "--model", "m", "--base-url", fs.base_url, "--judge", "m", "--limit", "1", "--no-notebook",
            "-p", "judge_max_tokens", "64", "-p", "settings", "direct", "-p", "judge_eval", "false", env=env)
    assert r.returncode in (0, 1), r.stderr
    assert "── all · sample · m · 6 benchmark(s) ──" in r.stdout, r.stdout
    rows = {x[0]: x for x in _table(r.stdout) if x[0] in FIVE}
    assert set(rows) == FIVE, r.stdout
    statuses = {}
    for b, row in rows.items():
        d = Path(row[-1].rstrip("/"))
        d = d if d.is_absolute() else ROOT / d
        assert d.parent == results / b / "sample" / "m", d                      # its own run folder
        m = read_json(d / "meta.json")
        assert m["status"] == row[1] and m["n"] == int(row[2]) and m["failures"] == int(row[3])
        statuses[b] = m["status"]
        has = "judge_max_tokens" in {p.name for p in benchmarks()[b].params()}
        assert (m["config"].get("judge_max_tokens") == 64) == has                # -p applied where declared
    assert r.returncode == max(CODES[s] for s in statuses.values())              # the worst
    assert f"exit      {r.returncode}" in r.stdout
    assert "not applicable: parameter 'judge' to abgen_eval, citeme" in r.stdout
    assert "not applicable: parameter 'settings' to abgen, abgen_eval, arxivbench, autobench, citeme" in r.stdout
    assert fs.calls > 0
