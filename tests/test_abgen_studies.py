"""AbGen user studies (Table 4, issue 10 item 7): failure cases → feedback form → revision → scores before and after;
simulated feedback; user-annotated examples as a split of their own. Against the fake server."""
import csv, json
from pathlib import Path
import pytest
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data
from scibench.benchmarks.abgen import studies as abgen_studies
from scibench.core import read_jsonl, read_json


def cli(argv) -> int:
    "`scibench abgen ARGV` as the CLI runs it (the benchmark's `Command`s)."
    from scibench.cli import run_command
    return run_command("abgen", abgen_studies.COMMANDS, argv)


@pytest.fixture
def env(tmp_path, monkeypatch, fake_server, results, own_data):
    "Our own data/ (the sample), a fake endpoint `fake` that revises designs and judges them, and its request log."
    d = own_data("abgen")
    bodies = []
    def reply(body):
        bodies.append(body); text = body["messages"][-1]["content"]
        if "Write only the feedback" in text: return "Hold the other modules fixed and " + "compare " * 70   # too long: cut to 50
        if "## Researcher Feedback" in text: return "REVISED design: Research Objective: ... Experiment Process: ..."
        if body["messages"][0]["role"] == "system":   # judge: revised designs get 5, the rest 2
            return "Reasons. Therefore, the score is: " + ("5" if "# Proposed Ablation Study\nREVISED" in text else "2")
        return "A design."
    fs = fake_server(reply=reply)
    reg = tmp_path / "models.toml"
    reg.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake-model"\nmax_retries = 2\ntimeout = 5\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))
    return d, fs, bodies


def fill(form: Path, text_for):
    rows = list(csv.DictReader(open(form, newline="")))
    for r in rows: r["feedback"] = text_for(r)
    with open(form, "w", newline="") as f:
        w = csv.DictWriter(f, abgen_studies.FORM_COLUMNS); w.writeheader(); w.writerows(rows)
    return rows


def test_study1_from_a_filled_form(env, tmp_path, results):
    d, fs, bodies = env
    form = tmp_path / "form.csv"
    assert cli(["select", "--split", "sample", "--limit", "2", str(form)]) == 0
    cases = read_jsonl(abgen_studies.cases_path(form))
    human = {r["meta_id"]: r for r in abgen_data.load_human_eval(split="sample")}
    assert cases and all(sum(human[c["case_id"]][k]["score"] for k in abgen_data.HUMAN_CRITERIA) / 3 < 3 for c in cases)
    last = cases[-1]["case_id"]   # left empty: not revised
    rows = fill(form, lambda r: "" if r["case_id"] == last else "Ablate only the filter; keep retrieval and the loss fixed.")
    assert cli(["study1", str(form), "--model", "fake", "--judge", "fake", "--name", "s1"]) == 0
    out = results / "abgen_study1" / "s1"
    st, recs = read_json(out / "study.json"), read_jsonl(out / "records.jsonl")
    assert st["feedback"] == "researchers (form)" and st["prompts"] == "scibench" and st["revised"] == len(rows) - 1 == len(recs)
    assert all(r["design_after"].startswith("REVISED") and r["before"] == {c: 2 for c in abgen_data.HUMAN_CRITERIA}
               and r["after"] == {c: 5 for c in abgen_data.HUMAN_CRITERIA} for r in recs)
    rev = [b for b in bodies if "## Researcher Feedback" in b["messages"][-1]["content"]]
    assert len(rev) == len(recs) and all("Ablate only the filter" in b["messages"][-1]["content"] for b in rev)
    t4 = abgen_studies.table4()
    ours = t4[t4.source == "scibench"].set_index("condition")
    assert ours.loc["Initial failure case", "importance"] == "2.00" and ours.loc["Revision with feedback", "soundness"] == "5.00 (+3.00)"
    assert ours.loc["Initial failure case (human scores)", "scorer"] == "human" and ours.loc["Revision with feedback", "scorer"] == "judge fake"
    assert set(ours.n) == {len(recs)}
    paper = t4[t4.source == "paper"].set_index(["system", "condition"])
    assert paper.loc[("GPT-4o", "Revision with Feedback"), "soundness"] == "4.6 (+2.6)"
    assert paper.loc[("Llama-3.1-70B", "Biomedical Domain"), "importance"] == "3.0"


def test_study1_simulated_feedback_from_a_run(env, tmp_path, results, run_bench):
    d, fs, bodies = env
    meta, run = run_bench("abgen", dict(model="fake", judge="fake", limit=3, max_tokens=16))   # every design judged 2: all failures
    form = tmp_path / "f.csv"
    assert cli(["select", "--run", str(run), str(form)]) == 0
    cases = read_jsonl(abgen_studies.cases_path(form))
    assert len(cases) == 3 and all(c["scored_by"].startswith("run sample/fake/") for c in cases)
    assert cli(["study1", str(form), "--model", "fake", "--judge", "fake", "--simulate", "fake"]) == 0
    st, recs = read_json(results / "abgen_study1" / "f" / "study.json"), read_jsonl(results / "abgen_study1" / "f" / "records.jsonl")
    assert st["feedback"] == "simulated by fake" and len(recs) == 3
    assert all(len(r["feedback"].split()) == 50 for r in recs)      # the model wrote more; the protocol allows 50 words
    t4 = abgen_studies.table4(); ours = t4[t4.source == "scibench"]
    assert set(ours.feedback) == {"simulated by fake"} and "Initial failure case (human scores)" not in set(ours.condition)


def test_form_feedback_over_50_words_is_refused(env, tmp_path, capsys):
    form = tmp_path / "form.csv"
    cli(["select", "--split", "sample", "--limit", "1", str(form)])
    fill(form, lambda r: "word " * 51)
    assert cli(["study1", str(form), "--model", "fake", "--judge", "fake"]) == 2
    err = capsys.readouterr().err
    assert "form.csv:2: field 'feedback': 51 words" in err and env[1].calls == 0


def test_study2_user_split(env, tmp_path, results, run_bench, capsys):
    d, fs, bodies = env
    f = tmp_path / "bio.jsonl"
    f.write_text("".join(json.dumps({**e, "example_id": f"bio-{i}"}) + "\n" for i, e in enumerate(abgen.load_abgen("sample")[:3])))
    assert cli(["add-split", "bio", str(f)]) == 0
    assert (d / "abgen" / "user" / "bio.jsonl").exists() and "--split user-bio" in capsys.readouterr().out
    meta, run = run_bench("abgen", dict(model="fake", judge="fake", split="user-bio", max_tokens=16))
    assert meta["status"] == "complete" and meta["n"] == 3 and run.parent.parent.name == "user-bio"
    t4 = abgen_studies.table4(); ours = t4[t4.source == "scibench"].iloc[0]
    assert (ours.study, ours.condition, ours.n, ours.importance) == ("2: domain generalization", "split user-bio", 3, "2.00 (n=3)")
    bad = tmp_path / "bad.jsonl"; bad.write_text('{"example_id": "x"}\n')
    assert cli(["add-split", "bad", str(bad)]) == 2 and "bad.jsonl:1" in capsys.readouterr().err
    assert cli(["add-split", "../x", str(f)]) == 2


def test_cli_verb(env, cli):
    r = cli("abgen", "--help")
    assert r.returncode == 0 and "select" in r.stdout and "study1" in r.stdout and "add-split" in r.stdout


# --------------------------------------------------------------------------- issue 20: clear errors, nothing poisoned
def test_study1_unknown_model_is_one_line(env, tmp_path, results, capsys):
    form = tmp_path / "form.csv"
    cli(["select", "--split", "sample", "--limit", "1", str(form)])
    fill(form, lambda r: "Ablate only the filter.")
    capsys.readouterr()
    assert cli(["study1", str(form), "--model", "nosuch", "--judge", "fake"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "'nosuch'" in err and "Traceback" not in err
    assert env[1].calls == 0 and not (results / "abgen_study1").exists()


def test_empty_study1_form_writes_nothing(env, tmp_path, results, capsys):
    form = tmp_path / "form.csv"
    cli(["select", "--split", "sample", "--limit", "2", str(form)])   # nobody filled it in
    capsys.readouterr()
    assert cli(["study1", str(form), "--model", "fake", "--judge", "fake"]) == 2
    err = capsys.readouterr().err
    assert "no case of" in err and "feedback" in err and "nothing written" in err
    assert env[1].calls == 0 and not (results / "abgen_study1").exists()


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


def test_an_empty_study_folder_from_before_is_left_out_of_table4(env, results, capsys):
    "A folder an empty form wrote before issue 20 no longer stops the tables: Table 4 leaves it out and says so."
    d = results / "abgen_study1" / "empty"; d.mkdir(parents=True)
    (d / "study.json").write_text(json.dumps(dict(model="m", judge="j", feedback="researchers (form)", prompts="scibench",
                                                  scored_by=["split sample (human)"])))
    (d / "records.jsonl").write_text("")
    t4 = abgen_studies.table4()
    assert set(t4.source) == {"paper"} and "left out of Table 4" in capsys.readouterr().err
