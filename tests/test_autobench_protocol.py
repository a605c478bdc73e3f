"AutoBench protocol (issue 18): `paper` by default, recorded in meta.json provenance, printed, and a column of every table."
from scibench.benchmarks.autobench import method as ab
from scibench.benchmarks.autobench import data as ad
from scibench.benchmarks.autobench import views as av
from test_autobench import P, fake_models, table  # noqa: F401 (the fixture)


def test_protocol_notes_shape():
    cfg = ab.AutoBenchConfig(model="local")
    p = ad.protocol_notes(cfg, solver_is_generator=True, solvers=["local"], cal_note=ab.FILTER_NOTE)
    assert p["name"] == "paper" and p["quirks"] == [] and set(p) == {"name", "prompts", "notes", "quirks", "differences"}
    assert any("GPT-4" in n for n in p["notes"]) and any("generator's model" in n for n in p["notes"])
    assert any("1 calibration solvers" in n for n in p["notes"]) and ab.FILTER_NOTE in p["notes"]
    assert p["differences"] == list(ad.PAPER_CHOICES) + list(ad.PAPER_GAPS) and 5 <= len(ad.PAPER_CHOICES) <= 10


def test_run_records_protocol_and_tables_show_it(fake_models, run_bench, results, capsys):  # noqa: F811
    meta, d = run_bench("autobench", {**P, "limit": 1, "ablate_retrieval": False}, max_failure_share=1.0)
    assert meta["status"] == "complete" and meta["config"]["protocol"] == "paper"
    p = meta["provenance"]["protocol"]
    assert p["name"] == "paper" and p["quirks"] == [] and p["differences"]
    assert "note: protocol paper: model=fake-gen generates (the paper: GPT-4)" in capsys.readouterr().err
    from scibench.runs import run_label
    for t in (table(t) for t in av.TABLES[:5]):
        assert "protocol" in t.columns
        ours = t[t["run"] == run_label(d)]
        assert set(ours["protocol"]) <= {"paper"}
        if "source" in t: assert set(t[t["source"] == "paper"]["protocol"]) == {"paper"}
    assert set(table(av.MAIN_TABLE).query("source == 'scibench'")["protocol"]) == {"paper"}
