"""AbGen user studies (Table 4): the paper's rows; study 2's user-annotated examples as a split of their own, run and
shown beside them. Against the fake server."""
import json
import pytest
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data
from scibench.core import DataError
from scibench.tables import build


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


def test_study2_user_split(env, tmp_path, results, run_bench):
    d, fs, bodies = env
    f = d / "abgen" / "user" / "bio.jsonl"; f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("".join(json.dumps({**e, "example_id": f"bio-{i}"}) + "\n" for i, e in enumerate(abgen.load_abgen("sample")[:3])))
    meta, run = run_bench("abgen", dict(model="fake", judge="fake", split="user-bio", max_tokens=16))
    assert meta["status"] == "complete" and meta["n"] == 3 and run.parent.parent.name == "user-bio"
    t4 = table4(); ours = t4[t4.source == "scibench"].iloc[0]
    assert (ours.study, ours.condition, ours.n, ours.importance) == ("2: domain generalization", "split user-bio", 3, "2.00 (n=3)")
    (f.parent / "bad.jsonl").write_text('{"example_id": "x"}\n')
    with pytest.raises(DataError, match="bad.jsonl:1"): abgen.load_abgen("user-bad")


def test_a_missing_user_split_says_where_it_goes(env):
    with pytest.raises(FileNotFoundError, match=r"user/none\.jsonl not found: write the split's examples there"):
        abgen.load_abgen("user-none")
