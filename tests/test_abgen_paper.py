"""AbGen as the paper ran it (issue 10, items 1-6): judge prompts, generation instruction, released names and zeros,
Table 2's two halves, known answers for eq. 2 / eq. 3 / pooled and the wiring of Tables 5 and 9, eq. 3 skip counts."""
import json, re
from pathlib import Path
import numpy as np
import pytest
from scibench.benchmarks.abgen import method as abgen
from scibench.benchmarks.abgen import data as abgen_data
from scibench.benchmarks.abgen import meta_eval as abgen_eval
from scibench.bench import ConfigError
from scibench.metrics import system_level, instance_level_detail, pooled, LEVELS

ROOT = Path(__file__).resolve().parent.parent


def table2():
    "Table 2 as `make tables` writes it (its spec over the complete runs)."
    from scibench.runs import complete_runs
    from scibench.tables import build
    return build(abgen.TABLE2, complete_runs("abgen"))


def registry(tmp_path, fs):
    p = tmp_path / "models.toml"
    p.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "fake-model"\nmax_retries = 2\ntimeout = 5\nstructured = "none"\n')
    return p


@pytest.fixture
def data(own_data):
    "A data/ folder of our own: the sample, and nothing downloaded (no released files)."
    return own_data("abgen")


@pytest.fixture
def fake(tmp_path, monkeypatch, fake_server):
    "A fake endpoint `fake` whose answers come from `reply(body)`; every request body is kept in `bodies`."
    def make(reply=None):
        bodies = []
        def answer(body):
            bodies.append(body)
            return reply(body) if reply else "Fine. Therefore, the score is: 3"
        fs = fake_server(reply=answer)
        monkeypatch.setenv("SCIBENCH_MODELS", str(registry(tmp_path, fs)))
        return fs, bodies
    return make


def released_prompt_file(path: Path, texts=None, tail="raise SystemExit('this file was executed')\n") -> Path:
    "A file in the form of the authors' utils/evaluation_prompt.py (Template constants, a function), written by us."
    texts = texts or {c: f"Judge {c} of $module.\n- **Score 5**\n  • best\n- **Score 1**\n  • worst\nTherefore, the score is: X"
                      for c in abgen.CRITERIA}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("from string import Template\n\n" + "".join(f"{abgen_data.RELEASED_CONSTANTS[c]} = Template(\"\"\"\n{t}\n\"\"\")\n\n"
                                                                for c, t in texts.items())
                    + "def prepare_user_prompt(example):\n    return f\"{example['method']}\"\n" + tail)
    return path


# --------------------------------------------------------------------------- item 1: judge prompts
def test_released_prompts_are_read_as_data_never_run(tmp_path):
    marker = tmp_path / "ran"
    p = released_prompt_file(tmp_path / "evaluation_prompt.py", tail=f"open({str(marker)!r}, 'w').write('x')\n")
    ps = abgen.released_prompts(p)
    assert set(ps) == set(abgen.CRITERIA) and ps["soundness"].startswith("\nJudge soundness of $module")
    assert not marker.exists(), "the prompt file must never be executed"
    bad = tmp_path / "bad.py"; bad.write_text('IMPORTANCE_CRITERIA = "x $module"\n')
    with pytest.raises(abgen_data.DataError, match="FAITHFULNESS_CRITERIA"): abgen.released_prompts(bad)


def test_download_prompts_writes_and_checks_the_file(tmp_path):
    from scibench.benchmarks.abgen.method import download_abgen_prompts
    from scibench.data import OfflineError
    src = tmp_path / "mirror"; released_prompt_file(src / "utils" / "evaluation_prompt.py")
    (src / "utils" / "inference_prompt.py").write_text('GENERATION_SYSTEM_PROMPT="""Our stand-in."""\n')
    ps = download_abgen_prompts(tmp_path / "dest", base=f"file://{src}/")
    p = next(x for x in ps if x.name == "evaluation_prompt.py")
    assert sorted(x.name for x in ps) == ["evaluation_prompt.py", "inference_prompt.py"]
    assert abgen.released_prompts(p)["overall"].startswith("\nJudge overall")
    assert abgen.released_generation_system(tmp_path / "dest" / "inference_prompt.py") == "Our stand-in."
    (src / "utils" / "evaluation_prompt.py").write_text("<html>not found</html>\n")
    with pytest.raises(OfflineError, match="not the expected prompt file"): download_abgen_prompts(tmp_path / "dest2", base=f"file://{src}/")
    assert not list((tmp_path / "dest2").glob("*")), "a bad download is not kept"


def test_prompt_sets_default_released_missing_and_sampling(data, fake, run_bench):
    fs, bodies = fake()
    # released asked for, not downloaded: a config error naming the command, before any call
    with pytest.raises(ConfigError, match=r"make data"):
        run_bench("abgen", dict(model="fake", judge="fake", limit=1, prompts="released"))
    assert fs.calls == 0
    # default (auto) without the file: our prompts; recorded in meta
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=1, max_tokens=16, protocol="scibench"))
    assert meta["config"]["prompts"] == "scibench"
    judge = [b for b in bodies if b["messages"][0]["role"] == "system"]
    assert len(judge) == 4 and all(b["temperature"] == 1.0 and b["max_tokens"] == 1024 for b in judge)   # released temperature
    assert any("**importance**" in b["messages"][0]["content"] for b in judge)
    gen = [b for b in bodies if b["messages"][0]["role"] == "user"][0]["messages"][0]["content"]
    e = abgen.load_abgen("sample")[0]
    assert "within 300 words" in gen and "plain text" in gen and e["method"] in gen          # item 2
    # once `make data` fetched the authors' file, auto means released: their text is the system turn
    released_prompt_file(data / "abgen" / "released" / "evaluation_prompt.py")
    n = len(bodies)
    meta2, _ = run_bench("abgen", dict(model="fake", judge="fake", limit=1, max_tokens=16, protocol="scibench"))
    assert meta2["config"]["prompts"] == "released"
    sys_turns = [b["messages"][0]["content"] for b in bodies[n:] if b["messages"][0]["role"] == "system"]
    assert sys_turns and all(re.match(r"\nJudge \w+ of " + re.escape(e["ablation_study"]["module_name"]), s) for s in sys_turns)
    # Table 2 (the newest run of each split and model) shows the prompt set, though it was not given on the command line
    t2 = table2(); ours = t2[t2.source == "scibench"]
    assert list(ours.prompts) == ["released"] and list(ours.settings) == ["limit=1, max_tokens=16"] and list(ours.protocol) == ["scibench"]


# --------------------------------------------------------------------------- item 3: released names and zeros
RELEASED_OVERALL = {   # the authors' meta_evaluation_results CSVs (file stem: overall instance Pearson, overall system Kendall)
    "DeepSeek-R1-0528": (0.245, 0.407), "DeepSeek-R1-0528-Qwen3-8B": (0.124, 0.660), "Llama-3.3-70B-Instruct-FP8-dynamic": (0.170, 0.516),
    "Llama-4-Maverick-17B-128E-Instruct-FP8": (0.122, 0.523), "Llama-4-Scout-17B-16E-Instruct": (0.083, 0.421),
    "Meta-Llama-3.1-70B-Instruct-FP8": (0.100, 0.436), "QwQ-32B": (0.225, 0.877), "Qwen2.5-32B-Instruct": (0.144, 0.673),
    "Qwen3-32B-AWQ": (0.248, 0.864), "Qwen3-8B": (0.237, 0.847), "gemini-2.5-flash-preview-05-20": (0.307, 0.775),
    "gpt-4.1": (0.246, 0.647), "gpt-4.1-mini": (0.194, 0.713), "gpt-4o": (0.179, 0.726)}


def test_every_released_judge_name_maps_to_its_paper_row():
    from scibench.report import reference
    t5 = reference("abgen_table5_instance_pearson").set_index("judge"); t9 = reference("abgen_table9_system_kendall").set_index("judge")
    for stem, (r5, r9) in RELEASED_OVERALL.items():
        n5, n9 = abgen_eval.paper_name(stem, t5.index), abgen_eval.paper_name(stem, t9.index)
        assert n5 is not None and n9 is not None, stem
        assert (t5.loc[n5, "overall"], t9.loc[n9, "overall"]) == (r5, r9), stem


H4 = [[1, 3, 5], [1, 3, 5], [2, 2, 2], [1, 2, 3]]   # 4 examples × systems A, B, C; example 3 constant for the humans
M4 = [[1, 3, 5], [5, 3, 1], [1, 1, 5], [2, 3, 4]]


def human_rows(H, examples=None):
    exs = examples or [{"example_id": f"e{i}"} for i in range(len(H))]
    return [{**e, "meta_id": f"{e['example_id']}@{s}", "model_response": f"Design. JUDGE-SCORE-{i}-{s}",
             **{c: {"score": H[i][j]} for c in abgen_data.HUMAN_CRITERIA}} for i, e in enumerate(exs) for j, s in enumerate("ABC")]


def judge_rows(M):
    return [{"meta_id": f"e{i}@{s}", **{c: {"explanation": "", "score": M[i][j]} for c in abgen.CRITERIA}}
            for i in range(len(M)) for j, s in enumerate("ABC")]


def write_released(root, H, judges: dict) -> Path:
    (root / "processed_outputs").mkdir(parents=True, exist_ok=True)
    (root / "human_evaluation.json").write_text(json.dumps(human_rows(H)))
    for name, M in judges.items(): (root / "processed_outputs" / f"{name}.json").write_text(json.dumps(judge_rows(M)))
    return root


def test_released_zeros_are_judge_failures(tmp_path):
    Mz = [row[:] for row in M4]; Mz[3][0] = 0          # the authors' code for an unparsable answer
    t = abgen_eval.released_tables(write_released(tmp_path / "rel", H4, {"gpt-4.1-mini": Mz}), n_resamples=20)
    t5 = t["abgen_released_table5"]
    fail, kept = t5[t5["score 0 counted as"] == "failure"].iloc[0], t5[t5["score 0 counted as"] != "failure"].iloc[0]
    assert fail.judge == "GPT-4.1-mini" and fail["zeros (imp/faith/sound/overall)"] == "1/1/1/1" and fail["missing judge scores"] == 1
    H, M = np.array(H4, float).ravel(), np.array(Mz, float).ravel()
    ok = np.arange(12) != 9                               # cell (example 3, system A) left out as a failure
    assert fail["importance (ours)"].startswith(f"{np.corrcoef(H[ok], M[ok])[0, 1]:.3f}")
    assert kept["importance (ours)"].startswith(f"{np.corrcoef(H, M)[0, 1]:.3f}")    # as the authors' code: 0 is a score
    assert fail["importance (ours)"] != kept["importance (ours)"]


# --------------------------------------------------------------------------- item 5: the equations, known answers
def test_eq2_eq3_pooled_differ_on_a_known_matrix():
    H, M = np.array(H4, float), np.array(M4, float)
    # eq. 2: column means H ∝ (1, 2, 3), M ∝ (9, 10, 15): Pearson 9/sqrt(93), Kendall 1
    assert system_level(H, M, "pearson") == pytest.approx(9 / np.sqrt(93)) == pytest.approx(0.93326, abs=1e-5)
    assert system_level(H, M, "kendall") == pytest.approx(1.0)
    # eq. 3: rows correlate 1, -1, (constant: none), 1 → (1 - 1 + 1) / 3 over 3 examples
    assert instance_level_detail(H, M, "pearson") == (pytest.approx(1 / 3), 3, 1)
    # pooled: one Pearson over the 12 pairs: 3 / sqrt(21 · 89/3) = 3 / sqrt(623)
    assert pooled(H, M, "pearson") == pytest.approx(3 / np.sqrt(623)) == pytest.approx(0.12019, abs=1e-5)
    assert LEVELS == {"system": system_level, "instance": LEVELS["instance"], "pooled": pooled}
    # a missing judge score: eq. 3 drops the row (0 over 2 examples)
    M[3, 0] = np.nan
    assert instance_level_detail(H, M, "pearson") == (pytest.approx(0.0), 2, 2)


def test_meta_evaluate_levels_counts_and_sensitivity():
    Mm = [row[:] for row in M4]; Mm[3][0] = None
    me = abgen_eval.meta_evaluate(human_rows(H4), judge_rows(Mm), criteria=("importance",), n_resamples=20).set_index(["level", "corr"])
    assert me.loc[("instance", "pearson"), "value"] == pytest.approx(0.0) and me.loc[("instance", "pearson"), "used"] == 2
    assert me.loc[("instance", "pearson"), "skipped"] == 2 and me.loc[("instance", "pearson"), "missing_judge"] == 1
    # imputed: row 4 becomes M = (1, 3, 4) → r = 9/sqrt(84); or (5, 3, 4) → r = -1/2
    assert me.loc[("instance (missing judge = 1)", "pearson"), "value"] == pytest.approx((1 - 1 + 9 / np.sqrt(84)) / 3)
    assert me.loc[("instance (missing judge = 5)", "pearson"), "value"] == pytest.approx((1 - 1 - 0.5) / 3)
    assert me.loc[("instance (missing judge = 5)", "pearson"), "used"] == 3


def test_released_tables_wiring(tmp_path):
    t = abgen_eval.released_tables(write_released(tmp_path / "rel", H4, {"gpt-4o": M4}), n_resamples=20)
    r5, r9 = t["abgen_released_table5"].iloc[0], t["abgen_released_table9"].iloc[0]
    for c in abgen.CRITERIA:
        assert r5[f"{c} (ours)"].startswith("0.120")   # Table 5 = pooled Pearson (not eq. 3 0.333, not eq. 2 0.933)
        assert r9[f"{c} (ours)"].startswith("1.000")   # Table 9 = system Kendall (not Pearson 0.933)
    assert (r5.judge, r5["overall (paper)"], r9["overall (paper)"]) == ("GPT-4o", "0.179", "0.726")


@pytest.mark.slow   # the meta-evaluation bootstraps 1,000 resamples per cell: a minute or more (CI runs it)
def test_tables_5_and_9_wiring_through_a_run(data, fake, run_bench, results, monkeypatch, tmp_path):
    "An AbGen-Eval run whose judge answers M4 (and fails once on overall): Table 5 and Table 9 read the right level and correlation."
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path / "figures"))
    exs = abgen.load_abgen("sample")[:4]
    rows = human_rows(H4, exs)
    (data / "samples" / "abgen" / "human_evaluation.json").write_text(json.dumps(rows))
    def reply(body):
        i, s = re.search(r"JUDGE-SCORE-(\d)-(\w)", body["messages"][-1]["content"]).groups()
        if (i, s) == ("3", "A") and "**overall" in body["messages"][0]["content"]: return "I cannot decide."
        return f"Reasons. Therefore, the score is: {M4[int(i)][ord(s) - 65]}"
    fake(reply)
    meta, d = run_bench("abgen_eval", dict(model="fake", judge_max_tokens=64))
    assert meta["status"] == "complete" and meta["config"]["prompts"] == "scibench"
    import pandas as pd
    abgen_eval.make_tables()   # the tables as written: results/tables/abgen_table5.csv, abgen_table9.csv
    t5, t9 = (pd.read_csv(results / "tables" / f"abgen_table{k}.csv", dtype=str, keep_default_na=False) for k in (5, 9))
    ours = t5[t5.source == "scibench"].set_index("level")
    for c in abgen_data.HUMAN_CRITERIA:
        assert ours.loc["instance", c] == "0.333 (n=4)" and ours.loc["pooled", c] == "0.120 (n=4)"
    assert ours.loc["instance", "overall"] == "0.000 (n=4)"                       # one judge failure drops example 4 from eq. 3
    assert ours.loc["instance", "examples in eq. 3 (imp/faith/sound/overall)"] == "3/3/3/2 of 4"
    assert ours.loc["instance (missing judge = 1)", "overall"] == f"{3 / np.sqrt(84):.3f} (n=4)"
    assert ours.loc["instance (missing judge = 5)", "overall"] == "-0.167 (n=4)"
    assert set(ours.prompts) == {"scibench"} and ours.loc["instance", "judge failures"] == "0/0/0/1"
    ours9 = t9[t9.source == "scibench"].iloc[0]
    assert all(ours9[c] == "1.000 (n=4)" for c in abgen.CRITERIA) and ours9.level == "system"
    paper9 = t9[t9.source == "paper"].set_index("judge")
    assert paper9.loc["QwQ-32B", "overall"] == "0.877" and paper9.loc["QwQ-32B", "prompts"] == "released"
    # the run's meta_eval.csv carries the sensitivity rows for every correlation
    me = pd.read_csv(d / "meta_eval.csv")
    sens = me[me.level.str.startswith("instance (missing")]
    assert len(sens) == 2 * 3 * 4 and "used" in me


# --------------------------------------------------------------------------- item 4: Table 2's two halves
def test_table2_human_half_and_paper_splits(data, results):
    rel = data / "abgen" / "released"; rel.mkdir(parents=True)
    human = [{"meta_id": f"e{i}@{s}", "model_response": "x", "importance": {"score": v}, "faithfulness": {"score": v},
              "soundness": {"score": 5 - v if s == "gpt-4o" else v}}
             for i in range(12) for s, v in (("gpt-4o", 4), ("Meta-Llama-3.1-70B-Instruct", 2 + i % 2))]
    (rel / "human_evaluation.json").write_text(json.dumps(human))
    t2 = table2()
    rec = t2[t2.source == "released (recomputed)"].set_index("system")
    assert set(rec.index) == {"GPT-4o", "Llama-3.1-70B"} and set(rec.split) == {"testmini"} and set(rec.evaluation) == {"human"}
    assert rec.loc["GPT-4o", "importance"] == "4.00 [4.00, 4.00]" and rec.loc["GPT-4o", "soundness"].startswith("1.00")
    assert rec.loc["GPT-4o", "overall (human: avg of 3)"].startswith("3.00") and rec.loc["GPT-4o", "n"] == 12
    assert rec.loc["Llama-3.1-70B", "importance"].startswith("2.50")
    paper = t2[t2.source == "paper"]
    h = paper[paper.evaluation == "human"].set_index("system"); j = paper[paper.evaluation == "LLM judge"].set_index("system")
    assert (h.loc["Human Expert", "split"], h.loc["Human Expert", "n"], h.loc["Human Expert", "importance"]) == ("testmini", 20, "4.65")
    assert (h.loc["Reference (orig)", "split"], h.loc["Reference (orig)", "n"]) == ("testmini", 20) and "Reference (orig)" not in j.index
    assert (j.loc["Human Expert", "split"], j.loc["Human Expert", "n"], j.loc["Human Expert", "importance"]) == ("testmini", 20, "4.82")
    assert (h.loc["GPT-4o", "split"], h.loc["GPT-4o", "n"], h.loc["GPT-4o", "overall (human: avg of 3)"]) == ("testmini", 100, "3.82")
    assert (j.loc["GPT-4o", "split"], j.loc["GPT-4o", "n"], j.loc["GPT-4o", "judge"]) == ("test", 1000, "GPT-4.1-mini")
