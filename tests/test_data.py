"`make data`: real download code, tested offline on files in the real schema."
import json
from pathlib import Path
import pytest
from scibench import data
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data

ROOT = Path(__file__).resolve().parent.parent


def test_fetch_url_offline_is_a_clear_error(tmp_path):
    with pytest.raises(data.OfflineError, match="cannot download http://127.0.0.1:9/x.json"):
        data.fetch_url("http://127.0.0.1:9/x.json", tmp_path / "x.json", timeout=2)
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.json.part").exists()


def test_download_abgen_offline_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(data.OfflineError, match="yale-nlp/AbGen"):
        abgen.download_abgen(tmp_path)


def test_download_abgen_writes_loadable_splits(tmp_path, monkeypatch):
    "With the hub replaced by a local dataset in the real schema, the files written load with the AbGen loader."
    import datasets
    rows = [json.loads(l) for l in (ROOT / "data/samples/abgen/sample.jsonl").read_text().splitlines()]
    human = json.loads((ROOT / "data/samples/abgen/human_evaluation.json").read_text())
    fake = datasets.DatasetDict({"validation": datasets.Dataset.from_list(rows[:5]), "test": datasets.Dataset.from_list(rows[5:]),
                                 "human_evaluation": datasets.Dataset.from_list(human)})
    monkeypatch.setattr(datasets, "load_dataset", lambda name, *a, **k: fake if name == "yale-nlp/AbGen" else None)
    paths = abgen.download_abgen(tmp_path)
    assert sorted(p.name for p in paths) == ["human_evaluation.jsonl", "test.jsonl", "validation.jsonl"]
    assert len(abgen.load_abgen(path=tmp_path / "validation.jsonl")) == 5
    assert len(abgen_data.load_human_eval(tmp_path / "human_evaluation.jsonl")) == 32


def test_download_reports_failures(monkeypatch, capsys):
    def boom(): raise data.OfflineError("cannot download X: offline")
    monkeypatch.setattr(data, "all_downloaders", lambda: {"abgen": [boom], "abgen_eval": [boom]})
    assert data.download(["abgen", "abgen_eval"]) == 1, "a downloader shared by two benchmarks runs once"
    assert "FAILED: cannot download X" in capsys.readouterr().out


def test_downloaders_come_from_the_registry():
    from scibench.bench import ConfigError
    d = data.all_downloaders()
    assert abgen.download_abgen in d["abgen"] and abgen.download_abgen in d["abgen_eval"]
    with pytest.raises(ConfigError, match="no downloaders for nope"):
        data.download(["nope"])


# --------------------------------------------------------------------------- mirrors: `scibench data NAME --base URL_OR_DIR`
def _cli(*argv) -> int:
    from scibench.cli import main
    with pytest.raises(SystemExit) as e: main(list(argv))
    return e.value.code


def _authors_prompts(root: Path, generation: bool = True) -> Path:
    "utils/evaluation_prompt.py (four Template constants with $module) and utils/inference_prompt.py, in the authors' layout, by us."
    u = root / "utils"; u.mkdir(parents=True, exist_ok=True)
    (u / "evaluation_prompt.py").write_text("from string import Template\n\n" + "".join(
        f'{n} = Template("""\nJudge {n.split("_")[0].lower()} of $module.\nTherefore, the score is: X\n""")\n\n'
        for n in ("IMPORTANCE_CRITERIA", "FAITHFULNESS_CRITERIA", "SOUNDNESS_CRITERIA", "OVERALL_CRITERIA")))
    if generation: (u / "inference_prompt.py").write_text('GENERATION_SYSTEM_PROMPT = """You design ablation studies."""\n\n'
                                                           "def f(x):\n    raise SystemExit('executed')\n")
    return root


@pytest.fixture
def data_tmp(tmp_path, monkeypatch):
    d = tmp_path / "data"; monkeypatch.setenv("SCIBENCH_DATA", str(d)); return d


def test_abgen_prompts_from_a_mirror_folder(tmp_path, data_tmp, capsys):
    m = _authors_prompts(tmp_path / "mirror")
    assert _cli("data", "abgen_prompts", "--base", str(m)) == 0
    rel = data_tmp / "abgen" / "released"
    assert sorted(p.name for p in rel.iterdir()) == ["evaluation_prompt.py", "inference_prompt.py"]
    assert abgen.released_prompts(rel / "evaluation_prompt.py")["soundness"].startswith("\nJudge soundness of $module")
    assert abgen.released_generation_system(rel / "inference_prompt.py") == "You design ablation studies."
    assert "from mirror" in capsys.readouterr().out


def test_abgen_prompts_missing_or_bad_file_keeps_nothing(tmp_path, data_tmp, capsys):
    m = _authors_prompts(tmp_path / "mirror", generation=False)
    assert _cli("data", "download_abgen_prompts", "--base", str(m)) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and str(m / "utils" / "inference_prompt.py") in out
    rel = data_tmp / "abgen" / "released"
    assert not rel.exists() or not list(rel.iterdir()), "nothing kept, no partial file"
    (m / "utils" / "inference_prompt.py").write_text("OTHER = 'x'\n")
    with pytest.raises(data.OfflineError, match="GENERATION_SYSTEM_PROMPT"): abgen.download_abgen_prompts(base=str(m))
    assert not rel.exists() or not list(rel.iterdir())


def test_abgen_released_from_a_mirror(tmp_path, data_tmp):
    m = tmp_path / "mirror"; (m / "meta_evaluation_outputs" / "processed_outputs").mkdir(parents=True)
    (m / "human_evaluation.json").write_text("[]\n")
    (m / "meta_evaluation_outputs" / "processed_outputs" / "gpt-4o.json").write_text("[]\n")
    with data.mirror(m): paths = abgen.download_abgen_released()
    assert sorted(p.name for p in paths) == ["gpt-4o.json", "human_evaluation.json"]
    assert (data_tmp / "abgen" / "released" / "processed_outputs" / "gpt-4o.json").exists()


def test_abgen_dataset_from_a_mirror_folder(tmp_path, data_tmp):
    "A copy of the dataset repository: data files and a dataset card naming the splits."
    rows = [json.loads(l) for l in (ROOT / "data/samples/abgen/sample.jsonl").read_text().splitlines()]
    m = tmp_path / "hub"; (m / "data").mkdir(parents=True)
    for split, rs in (("validation", rows[:5]), ("test", rows[5:])):
        (m / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))
    (m / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: validation\n    path: data/validation.jsonl\n"
                                 "  - split: test\n    path: data/test.jsonl\n---\n")
    with data.mirror(m): paths = abgen.download_abgen()
    assert sorted(p.name for p in paths) == ["test.jsonl", "validation.jsonl"]
    assert len(abgen.load_abgen(path=data_tmp / "abgen" / "validation.jsonl")) == 5


def test_every_other_downloader_reads_the_mirror(tmp_path, data_tmp, monkeypatch):
    "Each downloader asks the mirror for its files (the message names the file it looked for there)."
    from scibench.benchmarks.arxivbench import method as arxivbench
    from scibench.benchmarks.rubrics import paperbench
    m = tmp_path / "empty"; m.mkdir()
    with data.mirror(m):
        with pytest.raises(data.OfflineError, match=str(m / "api/v1/datasets/download/Cornell-University/arxiv")):
            arxivbench.download_snapshot(tmp_path / "s", build=False)
        with pytest.raises(data.OfflineError, match=str(m / "project/paperbench/data/papers/rice/paper.md")):
            paperbench.download_paperbench(tmp_path / "p", ids=["rice"])
        with pytest.raises(data.OfflineError, match=str(m / "human_evaluation.json")): abgen.download_abgen_released(tmp_path / "r")


def test_arxivbench_prompts_and_snapshot_from_a_mirror(tmp_path, data_tmp):
    import shutil, zipfile
    from scibench.benchmarks.arxivbench import method as arxivbench
    m = tmp_path / "mirror"
    shutil.copytree(ROOT / "data/samples/arxivbench/released", m)
    with data.mirror(m): [out, stats] = arxivbench.download_prompts()
    assert out == data_tmp / "arxivbench" / "released.jsonl" and json.loads(stats.read_text())["mirror"] == str(m)
    z = m / "api/v1/datasets/download/Cornell-University/arxiv"; z.parent.mkdir(parents=True)
    with zipfile.ZipFile(z, "w") as zf: zf.writestr("arxiv-metadata-oai-snapshot.json", '{"id": "1706.03762", "title": "T"}\n')
    with data.mirror(m): [snap] = arxivbench.download_snapshot(tmp_path / "s", build=False)
    assert "1706.03762" in snap.read_text()


def test_base_must_exist_and_names_are_checked(tmp_path, capsys):
    assert _cli("data", "abgen_prompts", "--base", str(tmp_path / "nope")) == 2
    assert "no such folder" in capsys.readouterr().err
    assert _cli("data", "nope", "--base", str(tmp_path)) == 2
    assert "abgen_prompts" in capsys.readouterr().err


def test_judge_eval_cases_from_a_local_mirror(tmp_path):
    "PaperBench's JudgeEval cases are listed from the mirror folder itself (not GitHub's contents API) and fetched from it."
    from scibench.data import mirror
    from scibench.benchmarks.rubrics.paperbench import PB_DATA, download_judge_eval
    case = tmp_path / "mirror" / PB_DATA / "judge_eval" / "p1" / "0"
    (case / "grading").mkdir(parents=True)
    (case / "grading" / "expected_result.json").write_text('{"score": 1}')
    (case / "submission.tar").write_bytes(b"not really a tar")
    (case / "notes.txt").write_text("not fetched")
    with mirror(tmp_path / "mirror"):
        out = download_judge_eval(tmp_path / "dest")
    assert sorted(p.relative_to(tmp_path / "dest").as_posix() for p in out) == ["p1/0/grading/expected_result.json", "p1/0/submission.tar"]
    assert (tmp_path / "dest" / "p1" / "0" / "grading" / "expected_result.json").read_text() == '{"score": 1}'
