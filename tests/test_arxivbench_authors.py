"""ArxivBench protocol `authors` (issue 18): the requests of the authors' released code (liningresearch/arXivBench,
experiments/gpt_exp.py `GPTQuerier.query`, experiments/utilities/tools.py `compare_results`) byte for byte, their
parse and population, and their `calculate_ACC`. Expected strings and numbers follow their code, written out here."""
import json

import pytest

from scibench.benchmarks.arxivbench import method as ab

from scibench.benchmarks.arxivbench import index as ai
from scibench.core import read_json, read_jsonl, write_jsonl

# their user turn of the query, as their triple-quoted literal reads in gpt_exp.py (indentation included)
THEIR_QUERY_USER = """Only list 3 papers with complete title and explict explicit arxiv url.
                            Place titles and links insides [[]], like [[title]] [[url]].
                            Separate each paper by a newline.
                            Do not include any additional commentary or explanations."""
# their judge's system turn, as their triple-quoted literal reads in tools.py
THEIR_JUDGE_SYSTEM = """You will be given a prompt, a LLM's response, and a paper's information. Your first task is to decide whether the response is relative to the prompt.
                            If not, write 'no' and don't follow the second task.
                            Second task: You will compare the LLM's response with paper's information, and your task is to decide whether they are talking about the same paper."""

def their_judge_user(prompt, title, arxiv_title, arxiv_abs):
    "compare_results' user turn, as their code concatenates it."
    paper_info = f"{arxiv_title}, {arxiv_abs}"
    return ("Prompt: "+prompt+"\n"+"Response: "+title+"\n"+"Information: "+paper_info+"\n"
            +"Just answer 'yes' or 'no'. If you don't know write 'pass'. Do not include any additional commentary or explanations.")

# our own metadata records, with the raw whitespace of the Kaggle snapshot (a wrapped title, an indented, wrapped abstract)
RECORDS = [dict(id="2101.00001", title="Sparse Kernels for\n  Lattice Gauge Theory", abstract="  We study sparse kernels.\nThey are fast.\n",
                categories="hep-lat"),
           dict(id="2101.00002", title="Optimal Transport on Graphs", abstract="  Transport\non graphs.\n", categories="math.OC"),
           dict(id="2101.00003", title="Random Matrix Spectra", abstract="Spectra.", categories="math.PR")]


def _setup(tmp_path, monkeypatch, prompts):
    "Prompts as split `mine` (one subject: Math) and an index of RECORDS → the index path."
    d = tmp_path/"data"/"arxivbench"; d.mkdir(parents=True)
    write_jsonl(d/"mine.jsonl", [dict(id=f"m-{i}", subject="Math", prompt=p) for i, p in enumerate(prompts)])
    (tmp_path/"snap.json").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    ai.build_index(tmp_path/"snap.json", tmp_path/"idx.sqlite", on_error="raise")
    monkeypatch.setenv("SCIBENCH_DATA", str(tmp_path/"data"))
    return tmp_path/"idx.sqlite"


def _run(run_bench, fs, ix, **kw):
    meta, d = run_bench("arxivbench", dict(model="fake", judge="fj", split="mine", index=str(ix), **kw),
                        endpoints={"fake": {"base_url": fs.base_url}, "fj": {"base_url": fs.base_url}})
    return meta, d, read_json(d/"scores.json"), read_jsonl(d/"records.jsonl")


def test_authors_requests_byte_for_byte(fake_server, run_bench, tmp_path, monkeypatch):
    prompt = "Can you recommend papers on lattice gauge theory with arXiv links?"
    ix = _setup(tmp_path, monkeypatch, [prompt])
    answer = ("[[  Sparse Kernels for Lattice Gauge Theory ]] [[https://arxiv.org/abs/2101.00001]]\n"
              "[[Transport]] https://arxiv.org/abs/2101.00002\n[[Spectra]] [https://arxiv.org/abs/2101.00003]]")
    bodies = []
    def reply(body):
        bodies.append(body)
        return "yes" if body["messages"][0]["content"] == THEIR_JUDGE_SYSTEM else answer
    meta, d, sc, recs = _run(run_bench, fake_server(reply=reply), ix)      # protocol authors is the default
    assert meta["config"]["protocol"] == "authors" and sc["protocol"] == "authors"
    queries = [b for b in bodies if b["messages"][0]["content"] != THEIR_JUDGE_SYSTEM]
    judges = [b for b in bodies if b["messages"][0]["content"] == THEIR_JUDGE_SYSTEM]
    assert len(queries) == 1 and len(judges) == 3
    q = queries[0]
    assert q["messages"] == [{"role": "system", "content": prompt}, {"role": "user", "content": THEIR_QUERY_USER}]
    # the whole body, field for field: openai 1.35.1's chat.completions.create(messages, model, temperature, max_tokens)
    assert q == dict(model=q["model"], messages=q["messages"], temperature=0.0, max_tokens=1000)
    # their titles are stripped; the record's title and abstract as written in the metadata (whole, not cut, not squashed)
    want = [their_judge_user(prompt, t, r["title"], r["abstract"])
            for t, r in zip(["Sparse Kernels for Lattice Gauge Theory", "Transport", "Spectra"], RECORDS)]
    got = sorted((b["messages"] for b in judges), key=lambda m: m[1]["content"])
    assert got == sorted(([{"role": "system", "content": THEIR_JUDGE_SYSTEM}, {"role": "user", "content": u}] for u in want),
                         key=lambda m: m[1]["content"])
    for b in judges:
        assert b == dict(model=b["model"], messages=b["messages"], temperature=0.0, max_tokens=1)   # text, one token, no seed
    assert [l["verdict"] for l in recs[0]["authors_links"]] == ["yes", "yes", "yes"]
    assert sc["subjects"]["Math"]["authors_accuracy"] == 100.0


# Five responses of one subject (their code: one input CSV = one subject). Judge answers by listed title.
FIVE = [
    # 0: two pairs → invalid: not scored, no judge call
    "[[Sparse Kernels]] [[https://arxiv.org/abs/2101.00001]]\n[[Transport]] [[https://arxiv.org/abs/2101.00002]]",
    # 1: "Yes" → yes; a /pdf/ link → skipped; a v2 suffix → looked up as written, not found → no (no call)
    "[[Sparse Kernels]] [[https://arxiv.org/abs/2101.00001]]\n[[As PDF]] [[https://arxiv.org/pdf/2101.00002]]\n"
    "[[Versioned]] [[https://arxiv.org/abs/2101.00002v2]]",
    # 2: the same id twice, both "yes" → counted twice; " yes" (not stripped) → pass
    "[[Kernels again]] [[https://arxiv.org/abs/2101.00001]]\n[[Kernels once more]] [[https://arxiv.org/abs/2101.00001]]\n"
    "[[Spacey]] [[https://arxiv.org/abs/2101.00003]]",
    # 3: a trailing '.' in the id → not found → no; "Yes" → yes; "Yes." → pass
    "[[Dotty]] [[https://arxiv.org/abs/2101.00002.]]\n[[Wrong title]] [[https://arxiv.org/abs/2101.00002]]\n"
    "[[Polite]] [[https://arxiv.org/abs/2101.00003]]",
    # 4: a judge request that fails (HTTP 400) → a recorded failure, in no count; "no" → no; "yes" → yes
    "[[Fails Always]] [[https://arxiv.org/abs/2101.00003]]\n[[Good]] [[https://arxiv.org/abs/2101.00002]]\n"
    "[[Another]] [[https://arxiv.org/abs/2101.00001]]",
]
ANSWERS = {"Sparse Kernels": "Yes", "Kernels again": "yes", "Kernels once more": "yes", "Spacey": " yes", "Wrong title": "Yes",
           "Polite": "Yes.", "Good": "no", "Another": "yes"}

def test_calculate_acc_known_answer(fake_server, run_bench, tmp_path, monkeypatch):
    prompts = [f"Request number {i} for papers on lattice gauge theory." for i in range(5)]
    ix = _setup(tmp_path, monkeypatch, prompts)
    judged = []
    def reply(body):
        m = body["messages"]
        if m[0]["content"] == THEIR_JUDGE_SYSTEM:
            judged.append(m[1]["content"].split("\nResponse: ")[1].split("\n")[0])
            return ANSWERS[judged[-1]]
        return FIVE[prompts.index(m[0]["content"])]
    fs = fake_server(reply=reply, permanent="Fails Always")
    meta, d, sc, recs = _run(run_bench, fs, ix)
    m = sc["subjects"]["Math"]
    # their code on these responses: response 0 invalid; evals (failed request dropped, as their future.result() raise is caught):
    # r1 yes, no (v2 not found) | r2 yes, yes, pass | r3 no ('.' not found), yes, pass | r4 no, yes
    # → yes 5, no 3, pass 2; calculate_ACC: round((5 / 8) * 100, 2) = 62.5
    assert m["authors_accuracy"] == 62.5 and m["authors_accuracy_n"] == 8
    assert (m["authors_yes"], m["authors_no"], m["authors_passed"], m["authors_not_found"]) == (5, 3, 2, 2)
    assert (m["authors_responses"], m["authors_invalid"], m["authors_skipped_links"], m["authors_judge_failures"]) == (4, 1, 1, 1)
    assert sc["subjects"]["all"]["authors_accuracy"] == 62.5
    assert sorted(judged) == sorted(ANSWERS)          # one call per found link of a valid response (the failing one never answered)
    r4 = recs[4]
    assert r4["failure"].startswith("judge: request failed") and r4["authors_links"][0]["verdict"] is None
    assert [l["verdict"] for l in recs[1]["authors_links"]] == ["yes", None, "no"]
    assert recs[1]["authors_links"][1]["skipped"] and recs[0]["authors_valid"] is False
    assert [l["answer"] for l in recs[2]["authors_links"]] == ["yes", "yes", " yes"]
    h = {e["name"]: e for e in meta["headline"]}[f"accuracy {ab.ACCURACIES['authors_accuracy']} (%)"]
    assert (h["value"], h["n"], h["failures"]) == (62.5, 8, 1)
    assert m["accuracy"] is None and "two-step" in m["accuracy_reason"]        # (a) needs the two-step judge
    # the same responses through our two-step flow (protocol paper) give no (b), and the population variant instead
    assert ab.score_records([ab.summary(r) for r in recs], protocol="paper")["Math"]["authors_accuracy"] is None


def test_all_pass_is_none_with_reason(fake_server, run_bench, tmp_path, monkeypatch):
    prompts = ["Papers on graphs, please."]
    ix = _setup(tmp_path, monkeypatch, prompts)
    answer = "\n".join(f"[[T{i}]] [[https://arxiv.org/abs/2101.0000{i}]]" for i in (1, 2, 3))
    fs = fake_server(reply=lambda b: "Pass" if b["messages"][0]["content"] == THEIR_JUDGE_SYSTEM else answer)
    meta, d, sc, recs = _run(run_bench, fs, ix)
    m = sc["subjects"]["Math"]
    assert meta["status"] == "complete"
    assert m["authors_accuracy"] is None and m["authors_passed"] == 3 and "ZeroDivisionError" in m["authors_accuracy_reason"]
    assert ab.calculate_acc(["pass", "pass"])[0] is None and ab.calculate_acc([])[0] is None


def test_plan_counts_the_authors_flow():
    from scibench.bench import get_benchmark
    from scibench.run import derive_plan
    b = get_benchmark("arxivbench")
    rows = {r["role"]: r for r in derive_plan(b, ab.ArxivBenchConfig(limit=1, subjects=["Math", "Physics"], max_tokens=100))}
    assert (rows["model"]["calls"], rows["judge"]["calls"], rows["judge"]["completion_tokens"]) == (2, 6, 6)   # ≤ 1 call per valid link
    rows = {r["role"]: r for r in derive_plan(b, ab.ArxivBenchConfig(limit=1, subjects=["Math", "Physics"], protocol="paper",
                                                                     judge_max_tokens=50))}
    assert rows["judge"]["calls"] == 12


def test_their_parse():
    n, links = ab.authors_links("[[A]] [[https://arxiv.org/abs/2101.00001v2]]\n[[B]]\nhttps://arxiv.org/pdf/2101.00002\n[[C]] [[HTTP://x.org/abs/1]]")
    assert n == 2 and [(l["id"], l["skipped"]) for l in links] == [("2101.00001v2", False), (None, True)]   # \s* spans the newline
    assert ab.authors_links("[[A]] [[https://arxiv.org/abs/1]] [[B]] [[https://arxiv.org/abs/2]] [[C]] [[https://arxiv.org/abs/3]]")[0] == 3


def test_protocol_choices_and_dry_run(run_bench, results):
    from scibench.bench import ConfigError
    with pytest.raises(ConfigError, match="protocol"):
        run_bench("arxivbench", dict(model="x", judge="x", protocol="nonsense"), endpoints={"x": {"base_url": "http://127.0.0.1:9/v1"}})
    meta, d = run_bench("arxivbench", dict(model="x", judge="x", limit=1, subjects="Math"), endpoints={"x": {"base_url": "http://127.0.0.1:9/v1"}},
                        dry_run=True)
    assert meta["status"] == "dry-run" and {r["role"]: r["calls"] for r in meta["plan"]} == {"model": 1, "judge": 3}
