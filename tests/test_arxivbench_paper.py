"ArxivBench as the paper ran it (issue 10): the three accuracies (item 8), the released prompts (item 9), provenance and judge validation (item 11)."
import json
import shutil
from pathlib import Path

import pytest
from scibench.cli import run_command

from scibench.benchmarks.arxivbench import method as ab

from scibench.benchmarks.arxivbench import index as ai
from scibench.core import DataError, read_json, read_jsonl
from scibench.tables import write_all

ROOT = Path(__file__).resolve().parent.parent
YES = '{"rationale": "ok", "answer": "yes"}'
SAMPLE_DATE = max(r["update_date"] for r in read_jsonl(ROOT/"data/samples/arxivbench/snapshot.jsonl", ["id", "update_date"]))

def head(meta, key):
    "A headline Estimate of `meta` by score key."
    names = {"accuracy": f"accuracy {ab.ACCURACIES['accuracy']} (%)",
             "authors_population_accuracy": f"accuracy {ab.ACCURACIES['authors_population_accuracy']} (%)",
             "strict_accuracy": f"accuracy {ab.ACCURACIES['strict_accuracy']} (%)"}
    return {h["name"]: h for h in meta["headline"]}[names[key]]

# --------------------------------------------------------------------------- item 8: which papers count
# Math: the requested format, two real papers and one malformed link → authors' population; yes, yes, no.
IN_FORMAT = ("1. [[Attention Is All You Need]] [[https://arxiv.org/abs/1706.03762]]\n"
             "2. [[Deep Residual Learning for Image Recognition]] [[https://arxiv.org/abs/1512.03385]]\n"
             "3. [[A Made Up Paper]] [[https://arxiv.org/abs/2008.049376]]")
# Computer Science: four links, not in the format: yes, yes, no (not in the snapshot), no (malformed).
OFF_FORMAT = ("1. Attention Is All You Need: https://arxiv.org/abs/1706.03762\n2. Generative Adversarial Nets: arXiv:1406.2661\n"
              "3. A Made Up Survey: https://arxiv.org/abs/1905.67890\n4. Another one: arXiv:19140567")

def _reply(body):
    u = body["messages"][-1]["content"]
    if u.startswith(("A researcher asked", "An AI assistant cited")): return YES
    return IN_FORMAT if "Ricci" in u else OFF_FORMAT

def test_three_accuracies_known_answer(fake_server, run_bench):
    fs = fake_server(reply=_reply)
    endpoints = {"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}}
    meta, d = run_bench("arxivbench", dict(model="fake", judge="fj", limit=1, subjects="Math,Computer Science", protocol="paper"),
                        endpoints=endpoints)
    recs = {r["subject"]: r for r in read_jsonl(d/"records.jsonl")}
    assert (recs["Math"]["format_pairs"], recs["Math"]["authors_valid"], recs["Math"]["status"]) == (3, True, "ok")
    assert (recs["Computer Science"]["authors_valid"], recs["Computer Science"]["status"]) == (False, "too_many")
    assert [p["verdict"] for p in recs["Computer Science"]["papers"]] == ["yes", "yes", "no", "no"]   # every listed link is judged
    a = read_json(d/"scores.json")["subjects"]["all"]
    # (a) every listed link: 4 yes of 7 (the malformed links and the id not in the snapshot are no)
    assert (a["accuracy"], a["accuracy_n"]) == (pytest.approx(400 / 7), 7)
    # (b') the authors' population: the Math response only, 2 of 3; (b) needs protocol authors
    assert (a["authors_population_accuracy"], a["authors_population_accuracy_n"], a["authors_responses"]) == (pytest.approx(200 / 3), 3, 1)
    assert a["authors_accuracy"] is None and "protocol authors" in a["authors_accuracy_reason"]
    # (c) strict: yes among the first three / 3 × 2 prompts
    assert (a["strict_accuracy"], a["strict_accuracy_n"]) == (pytest.approx(200 / 3), 6)
    assert (a["malformed_ids"], a["papers_listed"], a["fabricated"]) == (2, 7, 3)
    for k in ("accuracy", "authors_population_accuracy", "strict_accuracy"):          # each labelled, with n and CI, in the headline
        h = head(meta, k)
        assert (h["value"], h["n"]) == (pytest.approx(a[k]), a[f"{k}_n"])
        assert h["lo"] <= h["value"] <= h["hi"] if k != "authors_population_accuracy" else h["lo"] is None   # one prompt: no interval
    assert read_json(d/"scores.json")["accuracies"] == ab.ACCURACIES

def test_score_records_malformed_count_and_invalid_responses_leave_b():
    def rec(verdicts, authors, malformed=()):
        return dict(subject="Economics", status="ok" if len(verdicts) == 3 else "too_few", authors_valid=authors,
                    papers=[dict(verdict=v, verdict_failure=None, in_snapshot=v != "no", malformed="x" if i in malformed else None,
                                 taxonomy="correct") for i, v in enumerate(verdicts)])
    s = ab.score_records([rec(["yes", "no", "no"], True, malformed=(1, 2)), rec(["yes", "pass"], False), rec(["no", "yes", "pass"], True)])
    e = s["Economics"]
    assert (e["accuracy"], e["accuracy_n"]) == (pytest.approx(300 / 6), 6)           # malformed links are in the denominator
    assert (e["authors_population_accuracy"], e["authors_population_accuracy_n"]) == (pytest.approx(200 / 5), 5)   # the two-paper answer: not in (b')
    assert (e["strict_accuracy"], e["strict_accuracy_n"]) == (pytest.approx(300 / 9), 9)
    assert (e["passed"], e["population_passed"], e["malformed_ids"]) == (2, 1, 2)

def test_tables_carry_three_labelled_accuracies_and_the_snapshot(fake_server, run_bench, results, tmp_path, monkeypatch):
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path/"figures"))
    fs = fake_server(reply=_reply)
    run_bench("arxivbench", dict(model="fake", judge="fj", limit=1, subjects="Math,Computer Science", protocol="paper"),
              endpoints={"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}})
    write_all("arxivbench", ab.TABLES)
    import pandas as pd
    t1 = pd.read_csv(results/"tables"/"arxivbench_table1.csv")
    ours = t1[t1.source == "scibench"].set_index("accuracy")
    assert list(ours.index) == [v for k, v in ab.ACCURACIES.items() if "paper" in ab.ACCURACY_PROTOCOLS[k]]   # (a), (b'), (c)
    assert set(ours["protocol"]) == {"paper"}
    assert ours.loc[ab.ACCURACIES["accuracy"], "Math"] == "66.67 (n=3)"
    assert ours.loc[ab.ACCURACIES["accuracy"], "Computer Science"] == "50.00 (n=4)"
    assert ours.loc[ab.ACCURACIES["authors_population_accuracy"], "Computer Science"] == "–"   # no exactly-three response there
    assert "exactly-three responses 1/2" in ours.loc[ab.ACCURACIES["authors_population_accuracy"], "left out"]
    assert set(t1[t1.source == "paper"]["accuracy"]) == {ab.ACCURACIES["authors_accuracy"]}   # the paper's rows are definition (b)
    md = (results/"tables"/"arxivbench_table1.md").read_text()
    assert "the paper's rows are this definition" in md and f"latest update_date): {SAMPLE_DATE}" in md
    assert SAMPLE_DATE in (results/"tables"/"arxivbench_details.md").read_text()


# --------------------------------------------------------------------------- item 9: the released prompts
@pytest.fixture
def data(own_data):
    "A data dir with only the shipped samples (no `make data`)."
    return own_data("arxivbench")

@pytest.fixture
def hub(tmp_path, monkeypatch):
    "`huggingface_hub.snapshot_download` serving a copy of our files in the authors' schema (the hub is unreachable here)."
    import huggingface_hub
    snap = tmp_path/"hub"/"snapshots"/"0123abcd"
    shutil.copytree(ROOT/"data"/"samples"/"arxivbench"/"released", snap)
    (snap/"README.md").write_text("dataset card\n")
    asked = []
    def fake(repo_id, repo_type=None, **kw):
        asked.append((repo_id, repo_type)); return str(snap)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    return snap, asked

def test_download_prompts_offline_message(tmp_path, monkeypatch):
    from scibench.data import OfflineError
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="arXivBenchLLM/arXivBench"):
        ab.download_prompts(tmp_path)

def test_download_prompts_writes_the_released_split(data, hub):
    snap, asked = hub
    paths = ab.download_prompts()
    assert asked == [("arXivBenchLLM/arXivBench", "dataset")]
    assert paths[0] == data/"arxivbench"/"released.jsonl"
    ps = ab.load_prompts("released")
    assert [(p["id"], p["subject"]) for p in ps] == [("math-000", "Math"), ("math-001", "Math"), ("computer-science-000", "Computer Science"),
                                                     ("computer-science-001", "Computer Science"),
                                                     ("artificial-intelligence-000", "Artificial Intelligence"),
                                                     ("artificial-intelligence-001", "Artificial Intelligence")]
    assert ps[1]["prompt"].startswith("I am studying additive combinatorics")      # quoted CSV field, read whole
    st = read_json(data/"arxivbench"/"released.stats.json")
    assert (st["repo"], st["revision"], st["prompts"], st["subjects"]["Math"]) == ("arXivBenchLLM/arXivBench", "0123abcd", 6, 2)

def test_released_rows_other_layouts(tmp_path):
    (tmp_path/"all.jsonl").write_text('{"prompt": "Papers on topology?", "category": "Math"}\n{"prompt": "Papers on OS kernels?", "category": "OS"}\n')
    rows, st = ab.released_rows(tmp_path)
    assert [(r["subject"], r["prompt"]) for r in rows] == [("Math", "Papers on topology?"), ("Operating Systems", "Papers on OS kernels?")]
    (tmp_path/"all.jsonl").unlink(); (tmp_path/"Alchemy_prompts.csv").write_text("prompt\nTransmutation?\n")
    with pytest.raises(DataError, match=r"Alchemy_prompts\.csv:2: field 'subject'"): ab.released_rows(tmp_path)

def test_released_split_runs_and_says_make_data_when_absent(data, hub, fake_server, run_bench):
    from scibench.bench import ConfigError
    with pytest.raises(ConfigError, match=r"released\.jsonl.*make data"):
        run_bench("arxivbench", dict(split="released", model="x", judge="x"), endpoints={"x": {"base_url": "http://127.0.0.1:9/v1"}})
    ab.download_prompts()
    fs = fake_server(reply=_reply)
    meta, d = run_bench("arxivbench", dict(split="released", model="fake", judge="fj", index=str(ab.index_for("sample")), limit=1),
                        endpoints={"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}})
    assert meta["status"] == "complete" and d.parent.parent.name == "released"
    assert [r["id"] for r in read_jsonl(d/"records.jsonl")] == ["math-000", "computer-science-000", "artificial-intelligence-000"]

def test_released_is_a_downloader_and_generate_keeps_its_own_split():
    from scibench import data as sdata
    from scibench.bench import ConfigError
    assert ab.download_prompts in sdata.all_downloaders()["arxivbench"]
    with pytest.raises(ConfigError, match="not for generated prompts"): ab.generate_command(ab.GenerateArgs(split="released"))


# --------------------------------------------------------------------------- item 11: provenance, judge validation
def test_snapshot_date_in_index_scores_meta(fake_server, run_bench, tmp_path):
    p = tmp_path/"snap.json"
    p.write_text("\n".join(json.dumps(dict(id=f"2101.0000{i}", title=f"T{i}", update_date=d))
                           for i, d in enumerate(["2021-01-05", "2024-11-29", "2023-02-01"], 1)) + "\n")
    assert ai.build_index(p, tmp_path/"ix.sqlite").snapshot_date == "2024-11-29"
    with ai.open_index(tmp_path/"ix.sqlite") as ix: assert ix.snapshot_date == "2024-11-29"
    import sqlite3                                                                   # an index built before the date was kept
    con = sqlite3.connect(tmp_path/"ix.sqlite"); con.execute("DELETE FROM meta WHERE key = 'snapshot_date'"); con.commit(); con.close()
    with ai.open_index(tmp_path/"ix.sqlite") as ix: assert ix.snapshot_date == "2024-11-29"
    fs = fake_server(reply=_reply)
    meta, d = run_bench("arxivbench", dict(model="fake", judge="fj", limit=1, subjects="Math"),
                        endpoints={"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}})
    assert read_json(d/"scores.json")["index"]["snapshot_date"] == SAMPLE_DATE
    assert f"fabricated-id rate (%), snapshot {SAMPLE_DATE}" in [h["name"] for h in meta["headline"]]
    assert SAMPLE_DATE in (d/"meta.json").read_text()
    assert meta["provenance"]["snapshot_date"] == SAMPLE_DATE and meta["provenance"]["index_records"] > 0

def test_validate_judge_cli_with_fake_server(fake_server, tmp_path, capsys):
    labels = ROOT/"data/samples/arxivbench/judge_labels.jsonl"
    def reply(body):    # relevant unless the request is about the Ricci flow; every title matches
        u = body["messages"][-1]["content"]
        if u.startswith("A researcher asked"):
            return '{"rationale": "r", "answer": "no"}' if "Ricci flow" in u else YES
        return YES
    fs = fake_server(reply=reply)
    out = tmp_path/"vj.json"
    assert run_command("arxivbench", ab.COMMANDS, ["validate-judge", str(labels), "--judge", "fj", "--judge-base-url", fs.base_url,
                   "--index", str(ab.index_for("sample")), "--out", str(out)]) == 0
    r = json.loads(capsys.readouterr().out)
    # human vs judge: yes/yes, yes/yes, no/no (off topic), no/no (not in the snapshot), pass/yes, no/no (malformed link)
    assert [(x["human"], x["judge"]) for x in read_json(out)["rows"]] == [("yes", "yes"), ("yes", "yes"), ("no", "no"), ("no", "no"),
                                                                       ("pass", "yes"), ("no", "no")]
    assert (r["pairs"], r["n"], r["judge_failures"]) == (6, 6, 0)
    assert r["agreement"] == pytest.approx(500 / 6) and r["false_positive_rate"] == 0.0 and r["false_negative_rate"] == 0.0
    assert r["confusion"]["pass"]["yes"] == 1 and r["decided_by_judge_model"]["n"] == 4
    assert r["decided_by_judge_model"]["agreement"] == pytest.approx(75.0)
    assert r["index"]["snapshot_date"] == SAMPLE_DATE and "rows" not in r
    assert fs.calls == 4 + 3                                                         # relevance for 4 pairs in the snapshot, match for 3

def test_validate_judge_bad_labels(tmp_path):
    p = tmp_path/"l.jsonl"; p.write_text('{"prompt": "p", "title": "t", "url": "https://arxiv.org/abs/1706.03762", "label": "maybe"}\n')
    with pytest.raises(DataError, match=r"l\.jsonl:1: field 'label'"): ab.load_judge_labels(p)
    p.write_text('{"prompt": "p", "title": "t", "label": "yes"}\n')
    with pytest.raises(DataError, match="url"): ab.load_judge_labels(p)
    p.write_text('{"prompt": "p", "title": "Attention Is All You Need", "arxiv_id": "1706.03762", "label": "YES"}\n')
    assert ab.load_judge_labels(p)[0]["url"] == "https://arxiv.org/abs/1706.03762" and ab.load_judge_labels(p)[0]["label"] == "yes"
