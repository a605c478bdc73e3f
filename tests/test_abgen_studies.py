"""AbGen user studies (Table 4): the paper's rows; study 2's user-annotated examples as a split of their own, run and
shown beside them. Against the fake server."""
import json
import pytest
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data
from scibench.tables import build


def cli(argv) -> int:
    "`scibench abgen ARGV` as the CLI runs it (the benchmark's `Command`s)."
    from scibench.cli import run_command
    return run_command("abgen", abgen.COMMANDS, argv)


def table4():
    from scibench.runs import complete_runs
    return build(abgen_data.TABLE4, complete_runs("abgen"))


@pytest.fixture
def env(tmp_path, monkeypatch, fake_server, results, own_data):
    "Our own data/ (the sample), a fake endpoint `fake` that designs and judges (score 2), and its request log."
    d = own_data("abgen")
    bodies = []
    def reply(body):
        bodies.append(body)
        if body["messages"][0]["role"] == "system": return "Reasons. Therefore, the score is: 2"
        return "A design."
    fs = fake_server(reply=reply)
    reg = tmp_path / "models.toml"
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake-model"\nmax_retries = 2\ntimeout = 5\nstructured = "none"\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    return d, fs, bodies


def test_table4_paper_rows(env):
    t4 = table4()
    assert set(t4.source) == {"paper"}
    paper = t4.set_index(["system", "condition"])
    assert paper.loc[("GPT-4o", "Revision with Feedback"), "soundness"] == "4.6 (+2.6)"
    assert paper.loc[("Llama-3.1-70B", "Biomedical Domain"), "importance"] == "3.0"


def test_study2_user_split(env, tmp_path, results, run_bench, capsys):
    d, fs, bodies = env
    f = tmp_path / "bio.jsonl"
    f.write_text("".join(json.dumps({**e, "example_id": f"bio-{i}"}) + "\n" for i, e in enumerate(abgen.load_abgen("sample")[:3])))
    assert cli(["add-split", "bio", str(f)]) == 0
    assert (d / "abgen" / "user" / "bio.jsonl").exists() and "--split user-bio" in capsys.readouterr().out
    meta, run = run_bench("abgen", dict(model="fake", judge="fake", split="user-bio", max_tokens=16))
    assert meta["status"] == "complete" and meta["n"] == 3 and run.parent.parent.name == "user-bio"
    t4 = table4(); ours = t4[t4.source == "scibench"].iloc[0]
    assert (ours.study, ours.condition, ours.n, ours.importance) == ("2: domain generalization", "split user-bio", 3, "2.00 (n=3)")
    bad = tmp_path / "bad.jsonl"; bad.write_text('{"example_id": "x"}\n')
    assert cli(["add-split", "bad", str(bad)]) == 2 and "bad.jsonl:1" in capsys.readouterr().err
    assert cli(["add-split", "../x", str(f)]) == 2


def test_cli_verb(env, cli):
    r = cli("abgen", "--help")
    assert r.returncode == 0 and "add-split" in r.stdout


# --------------------------------------------------------------------------- issue 20: clear errors, nothing poisoned
def test_add_split_refuses_to_replace_an_existing_split(env, tmp_path, capsys):
    d = env[0]
    f = tmp_path / "bio.jsonl"
    f.write_text("".join(json.dumps({**e, "example_id": f"bio-{i}"}) + "\n" for i, e in enumerate(abgen.load_abgen("sample")[:2])))
    assert cli(["add-split", "bio", str(f)]) == 0
    before = (d / "abgen" / "user" / "bio.jsonl").read_text()
    g = tmp_path / "other.jsonl"
    g.write_text(f.read_text().splitlines(keepends=True)[0])
    capsys.readouterr()
    assert cli(["add-split", "bio", str(g)]) == 2
    err = capsys.readouterr().err
    assert "bio.jsonl" in err and "--force" in err and (d / "abgen" / "user" / "bio.jsonl").read_text() == before
    assert cli(["add-split", "bio", str(g), "--force"]) == 0
    assert len(abgen.load_abgen("user-bio")) == 1


def test_add_split_missing_file_says_so(env, tmp_path, capsys):
    assert cli(["add-split", "bio", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "none.jsonl not found" in err and "make data" not in err
    assert not (env[0] / "abgen" / "user" / "bio.jsonl").exists()
