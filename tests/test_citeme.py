"""CiteME: the authors' no-search request on the wire, their parse and correctness rule, the agent's plan = its run,
the downloader on a file in the released schema."""
import csv
import pytest
from scibench.bench import get_benchmark
from scibench.core import DataError, read_jsonl
from scibench.benchmarks.citeme import method as cm

# src/retriever/prompt_templates/zero_shot_no_search.txt of bethgelab/CiteME, as `open(...).read()` returns it
THEIR_SYSTEM = ("You are an expert in machine learning papers. You are given an excerpt from a paper, where a citation was "
                "deleted. I'm trying to find the citation (ignore the word [CITATION], that's just where the citation was "
                "deleted from). Read the following excerpt, and tell me what paper was cited. Give me the full title of the "
                "paper. If you don\u2019t know, try to guess. \n")
# LLMNoSearch.__call__ (src/retriever/agent.py)
THEIR_USER = "You are now given an excerpt. Find me the paper cited in the excerpt. Only return the paper title, nothing else.\n\n"


def test_the_authors_no_search_request_on_the_wire(fake_server, run_bench):
    seen = []
    fs = fake_server(reply=lambda b: seen.append(b) or "Based on the excerpt: Attention Is All You Need")
    meta, d = run_bench("citeme", dict(model="fake", protocol="authors", limit=2), endpoints={"fake": {"base_url": fs.base_url}})
    items = cm.load_items("sample", 2)
    assert [b["messages"] for b in sorted(seen, key=lambda b: b["messages"][1]["content"])] == sorted(
        ([{"role": "system", "content": THEIR_SYSTEM}, {"role": "user", "content": THEIR_USER + it["excerpt"]}] for it in items),
        key=lambda m: m[1]["content"])
    assert {b["temperature"] for b in seen} == {0.95}
    recs = read_jsonl(d / "records.jsonl")
    assert [r["answer"] for r in recs] == ["Attention Is All You Need"] * 2 and [r["correct"] for r in recs] == [True, False]
    assert recs[1]["in_index"] is True                       # a wrong answer naming a real paper
    h = {x["name"]: x for x in meta["headline"]}
    assert h["accuracy (%)"]["value"] == 50.0 and h["accuracy (%)"]["n"] == 2
    assert h["wrong answers naming a title not in the index (%)"]["value"] == 0.0
    assert meta["provenance"]["protocol"]["quirks"] and meta["provenance"]["protocol"]["name"] == "authors"


@pytest.mark.parametrize("reply,title", [("Based on the excerpt: Deep Residual Learning", "Deep Residual Learning"),
                                         ("I guess: Adam ", "Adam"), ("Most likely: X", "Most likely: X"),
                                         (" Attention Is All You Need\n", " Attention Is All You Need\n")])
def test_their_parse(reply, title):
    assert cm.authors_title(reply) == title


def test_their_correctness_rule_and_the_invented_title_rate(fake_server, run_bench):
    assert cm.similar("deep residual learning for image recognition.", "Deep Residual Learning for Image Recognition")
    assert not cm.similar("Residual Learning", "Deep Residual Learning for Image Recognition")
    assert not cm.similar("abcde", "abcdx")                  # ratio 0.8 is not above 0.8
    fs = fake_server(reply=lambda b: "Quantum Gradient Sheaves for Citation Retrieval")
    meta, d = run_bench("citeme", dict(model="fake", limit=3), endpoints={"fake": {"base_url": fs.base_url}})
    h = {x["name"]: x for x in meta["headline"]}
    assert h["accuracy (%)"]["value"] == 0.0 and h["wrong answers naming a title not in the index (%)"]["value"] == 100.0


@pytest.mark.parametrize("setting", ["no_search", "agent"])
def test_plan_is_the_run_against_the_stub(fake_server, run_bench, setting):
    from scibench.llm import get_model
    from scibench.run import derive_plan
    b = get_benchmark("citeme")
    fs = fake_server(reply=b.stub_reply)
    params = dict(model="fake", setting=setting, max_actions=3)
    plan = derive_plan(b, b.make_config(params), {"fake": get_model("fake", base_url=fs.base_url)})
    meta, d = run_bench("citeme", params, endpoints={"fake": {"base_url": fs.base_url}})
    assert meta["status"] == "complete" and meta["failures"] == 0
    assert {r["role"]: r["calls"] for r in plan} == {"model": meta["usage"]["model"]["requests"]}
    n = len(cm.load_items("sample"))
    assert meta["usage"]["model"]["requests"] == n * (2 if setting == "agent" else 1)
    if setting == "agent":                                   # the stub searches the excerpt's end, then selects the first hit
        recs = read_jsonl(d / "records.jsonl")
        assert all(r["answer"] and r["steps"][0]["action"]["name"] == "search_relevance" for r in recs)
        assert sum(r["correct"] for r in recs) >= n // 2 and {x["name"] for x in meta["headline"]} >= {"target listed by a search (%)"}


def test_agent_errors_count_as_wrong_with_their_reason(fake_server, run_bench):
    fs = fake_server(reply=lambda b: '{"reason": "r", "action": {"name": "select", "paper_id": "nope"}}')
    meta, d = run_bench("citeme", dict(model="fake", setting="agent", max_actions=2, limit=1),
                        endpoints={"fake": {"base_url": fs.base_url}})
    r = read_jsonl(d / "records.jsonl")[0]
    assert r["error"] == "Max actions reached" and r["correct"] is False and not r["failure"]
    assert "not found in buffer" in r["steps"][0]["observation"]


def test_the_downloader_on_a_file_in_the_released_schema(tmp_path):
    from scibench.data import mirror
    hub = tmp_path / "hub"; hub.mkdir()
    with open(hub / "citeme.csv", "w", newline="") as f:
        w = csv.writer(f); w.writerow(cm.COLUMNS)
        w.writerow([7, "We use [CITATION].", "Adam: A Method for Stochastic Optimization", "u", "S", "u", "", "test"])
        w.writerow([8, "As in [CITATION].", "A[TITLE_SEPARATOR]B", "u", "S", "u", "2021.0", "train"])
    with mirror(hub):
        out, = cm.download_citeme(tmp_path / "out" / "citeme.csv")
    assert [(x["id"], x["year"], x["targets"]) for x in cm.read_items(out, "test")] == [("7", 2024, ["Adam: A Method for Stochastic Optimization"])]
    assert [x["targets"] for x in cm.read_items(out, "train")] == [["A", "B"]]
    (hub / "citeme.csv").write_text("id,excerpt\n1,x\n")
    with mirror(hub), pytest.raises(DataError, match=r"bad.csv:1: field 'target_paper_title': missing column"):
        cm.download_citeme(tmp_path / "bad.csv")
