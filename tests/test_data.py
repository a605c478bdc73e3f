"`make data`: real download code, tested offline on files in the real schema."
import json
from pathlib import Path
import pytest
from scibench import abgen, data

ROOT = Path(__file__).resolve().parent.parent


def test_fetch_url_offline_is_a_clear_error(tmp_path):
    with pytest.raises(data.OfflineError, match="cannot download http://127.0.0.1:9/x.json"):
        data.fetch_url("http://127.0.0.1:9/x.json", tmp_path / "x.json", timeout=2)
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.json.part").exists()


def test_download_abgen_offline_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(data.OfflineError, match="yale-nlp/AbGen"):
        data.download_abgen(tmp_path)


def test_download_abgen_writes_loadable_splits(tmp_path, monkeypatch):
    "With the hub replaced by a local dataset in the real schema, the files written load with the AbGen loader."
    import datasets
    rows = [json.loads(l) for l in (ROOT / "data/samples/abgen/sample.jsonl").read_text().splitlines()]
    human = json.loads((ROOT / "data/samples/abgen/human_evaluation.json").read_text())
    fake = datasets.DatasetDict({"validation": datasets.Dataset.from_list(rows[:5]), "test": datasets.Dataset.from_list(rows[5:]),
                                 "human_evaluation": datasets.Dataset.from_list(human)})
    monkeypatch.setattr(datasets, "load_dataset", lambda name, *a, **k: fake if name == "yale-nlp/AbGen" else None)
    paths = data.download_abgen(tmp_path)
    assert sorted(p.name for p in paths) == ["human_evaluation.jsonl", "test.jsonl", "validation.jsonl"]
    assert len(abgen.load_abgen(path=tmp_path / "validation.jsonl")) == 5
    assert len(abgen.load_human_eval(tmp_path / "human_evaluation.jsonl")) == 32


def test_download_reports_failures(monkeypatch, capsys):
    def boom(): raise data.OfflineError("cannot download X: offline")
    monkeypatch.setattr(data, "all_downloaders", lambda: {"abgen": [boom], "abgen_eval": [boom]})
    assert data.download(["abgen", "abgen_eval"]) == 1, "a downloader shared by two benchmarks runs once"
    assert "FAILED: cannot download X" in capsys.readouterr().out


def test_downloaders_come_from_the_registry():
    from scibench.bench import ConfigError
    d = data.all_downloaders()
    assert data.download_abgen in d["abgen"] and data.download_abgen in d["abgen_eval"]
    with pytest.raises(ConfigError, match="no downloaders for nope"):
        data.download(["nope"])
