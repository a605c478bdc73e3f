"Rubrics protocol (issue 18): `paper` by default, recorded in meta.json provenance, printed, and a column of every table."
import pytest

from scibench.benchmarks.rubrics import method as rubrics

from scibench.benchmarks.rubrics import views as rubrics_views
from scibench.bench import ConfigError
from test_rubrics import fake_registry  # noqa: F401 (the fixture)


def test_protocol_notes_shape():
    cfg = rubrics.RubricsConfig(model="m", judge="local", k=3, max_items=4)
    p = rubrics.protocol_notes(cfg)
    assert p["name"] == "paper" and p["quirks"] == [] and set(p) == {"name", "prompts", "notes", "quirks", "differences"}
    assert any(n.startswith("k=3") for n in p["notes"]) and any("GPT-4o-mini" in n for n in p["notes"])
    assert any("max_items=4" in n for n in p["notes"]) and any("Qwen3-Embedding-8B" in n for n in p["notes"])
    pb = [f"JudgeEval's PaperBench judge: {d}" for d in rubrics.PB_DEPARTURES]
    assert p["differences"] == list(rubrics.PAPER_CHOICES) + list(rubrics.PAPER_GAPS) + pb
    r = rubrics.protocol_notes(rubrics.RubricsConfig(model="m", grader="retrieval"))
    assert r["differences"] == list(rubrics.PAPER_CHOICES) + list(rubrics.PAPER_GAPS)
    assert 5 <= len(rubrics.PAPER_CHOICES) <= 12
    s = rubrics.protocol_notes(rubrics.RubricsConfig(model="m", protocol="scibench"))
    assert s["name"] == "scibench" and s["notes"] == [] and s["differences"] == list(rubrics.SCIBENCH_DIFFERENCES) + pb
    assert rubrics_views.run_protocol({}) == "paper (a run from before the protocol parameter)"
    assert rubrics_views.run_protocol({"protocol": "scibench"}) == "scibench"


def test_bad_protocol_stops(fake_registry, run_bench):  # noqa: F811
    with pytest.raises(ConfigError, match="protocol"):
        run_bench("rubrics", dict(model="fake", judge="fake", protocol="authors"))


def test_run_records_protocol_and_tables_show_it(fake_registry, run_bench, results, capsys):  # noqa: F811
    meta, out = run_bench("rubrics", dict(model="fake", judge="fake", k=3, settings="direct", judge_eval=False))
    assert meta["status"] == "complete" and meta["config"]["protocol"] == "paper"
    p = meta["provenance"]["protocol"]
    assert p["name"] == "paper" and p["quirks"] == [] and p["differences"]
    err = capsys.readouterr().err
    assert "note: protocol paper: k=3" in err
    # the run's Flow declares the protocol and notes it before its setup: first in provenance and on stderr (issue 19)
    assert rubrics.run.protocol is not None and list(meta["provenance"]) == ["protocol", "grader paper"]
    assert err.index("note: protocol paper: k=3") < err.index("rubrics: grader: ")
    from scibench.runs import run_label
    from scibench.runs import complete_runs
    from scibench.tables import build
    for t in (build(s, complete_runs("rubrics")) for s in (rubrics.TABLE1, rubrics.TABLE2, rubrics.TABLE_STATS)):
        ours = t[t["run"] == run_label(out)]
        assert len(ours) and set(ours["protocol"]) == {"paper"}
        if "source" in t: assert set(t[t["source"] == "paper"]["protocol"]) == {"paper"}
