"ArxivBench protocol record (issue 18): meta.json provenance.protocol in AbGen's shape (name, notes, quirks, differences), printed."
from scibench.benchmarks.arxivbench import method as ab
from scibench.llm import ModelSpec


def _reply(body):
    return "yes" if body["messages"][0]["content"] == ab.AUTHORS_JUDGE_SYSTEM else "[[A]] [[https://arxiv.org/abs/2101.00001]]"


def test_protocol_notes_shape():
    local = ModelSpec("local", "http://127.0.0.1:1/v1", "smollm2-360m", embedded=True)
    p = ab.protocol_notes(ab.ArxivBenchConfig(model="m", max_tokens=100, judge_max_tokens=50), local)
    assert p["name"] == "authors" and set(p) == {"name", "prompts", "notes", "quirks", "differences"}
    assert "max_tokens=100 (theirs: 1000)" in p["notes"] and any("embedded SmolLM2" in n and "Llama-3.1-8B" in n for n in p["notes"])
    assert any("judge_max_tokens=50 is not used" in n for n in p["notes"])
    assert any("explict explicit" in q for q in p["quirks"]) and any("ZeroDivisionError" in x for x in p["differences"])
    assert any("seed" in x for x in p["differences"]) and any("file_prompts[1:2]" in x for x in p["differences"])
    llama = ModelSpec("llama", "http://x/v1", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo")
    assert ab.protocol_notes(ab.ArxivBenchConfig(model="m"), llama)["notes"] == []
    q = ab.protocol_notes(ab.ArxivBenchConfig(model="m", protocol="paper"), llama)
    assert q["name"] == "paper" and q["quirks"] == [] and q["differences"] == list(ab.PAPER_DIFFERENCES)
    assert ab.protocol_notes(ab.ArxivBenchConfig(model="m", protocol="scibench", max_tokens=5), local)["notes"] == []


def test_run_records_protocol(fake_server, run_bench, results, capsys):
    fs = fake_server(reply=_reply)
    meta, d = run_bench("arxivbench", dict(model="fake", judge="fj", limit=1, subjects="Math", max_tokens=100),
                        endpoints={"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}})
    p = meta["provenance"]["protocol"]
    assert p["name"] == "authors" == meta["config"]["protocol"] and p["quirks"] == list(ab.AUTHORS_QUIRKS)
    assert "max_tokens=100 (theirs: 1000)" in p["notes"] and p["differences"] == list(ab.AUTHORS_DIFFERENCES)
    err = capsys.readouterr().err
    assert "note: protocol authors: max_tokens=100 (theirs: 1000)" in err and "not their meta-llama/Meta-Llama-3.1-8B" in err
    from scibench.runs import complete_runs, run_label
    from scibench.tables import build
    t = build(ab.TABLE1, complete_runs("arxivbench"))
    assert set(t[t["run"] == run_label(d)]["protocol"]) == {"authors"}
