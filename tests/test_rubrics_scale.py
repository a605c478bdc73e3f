"Rubrics at the papers' scale (issue 11): uncapped rubrics, human-scale examples, the distilled skill's model and check, the embedder."
import json, re, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
import numpy as np
import pytest
from scibench import metrics
from bench import rubrics as rubrics_perf
from scibench.benchmarks.rubrics import method as rubrics
from scibench.bench import ConfigError, get_benchmark
from scibench.llm import LLM, ModelSpec, pipeline
from scibench.benchmarks.rubrics.paperbench import _read_tree

ROOT = Path(__file__).resolve().parent.parent
TREES = ROOT.parent/"shared"/"data"/"paperbench"/"rubrics"       # real PaperBench trees (development only)
needs_trees = pytest.mark.skipif(not TREES.exists(), reason=f"{TREES} is absent (real PaperBench rubric trees, development only)")

# the skill.md a run committed before issue 11 (scores.json said used: true, failure: null)
BAD_SKILL = ('{ "thought": "5. The paper\'s experiments must be executed using the code repository, which includes a list of files '
             'containing text (add ","tool" :"list_files", "path":"file path(for read_file / write_file)", "content": "file content (for read_file)"}')
GOOD_SKILL = ("# How to write a reproduction rubric\n1. Read the whole paper and list every method component, experiment, dataset, "
              "metric and baseline it reports.\n2. Write one checkable criterion per implementation step, per experiment that must "
              "be run and per result that must match.\n3. Give importance 5 to the core method and the main results, 1 to minor "
              "logging or plotting details.\n4. Avoid vague items; name the hyperparameters and numbers that must be reproduced.")


def item(i): return {"criterion": f"Implements component {i} of the proposed method with the settings of Section {i % 7}",
                     "importance": 1 + i % 5, "category": rubrics.CATEGORIES[i % 3]}


# -- 1. rubric size ------------------------------------------------------------------------------------

def test_instructions_without_a_cap_keep_the_instruction_set():
    text = rubrics.instructions(0)
    assert text and "checklist" in text and "importance" in text and "Code Development" in text and "at most" not in text
    assert rubrics.instructions() == text                              # the default is no cap
    assert rubrics.instructions(40).startswith(text) and rubrics.instructions(40).endswith("Write at most 40 items.")
    paper = rubrics.load_papers("sample")[0]
    for prompt in (rubrics.direct_prompt(paper), rubrics.icl_prompt(paper, []), rubrics.agent_task()):
        assert text in prompt


def test_150_item_answer_parses_whole(fake_server, tmp_path):
    "A direct answer of 150 items, through the generation path: nothing capped, cut or dropped; no maxItems in the schema sent."
    seen = []
    answer = json.dumps({"items": [item(i) for i in range(150)]})
    def reply(body):
        seen.append(body); return answer
    fs = fake_server(reply=reply)
    llm = LLM(ModelSpec("fake", fs.base_url, "fake", structured="json_schema"), cache=False, progress=False)
    papers = rubrics.load_papers("sample")
    recs = pipeline(papers, lambda p: rubrics.agenerate_rubric(llm, papers, p, "direct", tmp_path), [llm])
    assert [len(r["items"]) for r in recs] == [150, 150] and all(r["failure"] is None and not r["dropped"] for r in recs)
    assert [i["criterion"] for i in recs[0]["items"]] == [item(i)["criterion"] for i in range(150)]
    assert "maxItems" not in json.dumps(seen[0]) and seen[0]["max_tokens"] == 8192
    assert rubrics.RubricsConfig().max_items == 0 and rubrics.RubricsConfig().max_tokens >= 150 * 50
    # the same 150 items written by the agent in five parts (JSON lines, then {"items": [...]} parts) parse whole
    parts = ["\n".join(json.dumps(item(i)) for i in range(30 * k, 30 * k + 30)) if k % 2 == 0 else
             json.dumps({"items": [item(i) for i in range(30 * k, 30 * k + 30)]}) for k in range(5)]
    r = rubrics.parse_rubric("\n".join(parts))
    assert len(r["items"]) == 150 and not r["dropped"] and r["how"].startswith("json (")
    # a later part cut at max_tokens: the complete items of every part are kept
    r = rubrics.parse_rubric("\n".join(parts[:4]) + "\n" + parts[4][:-300])
    assert 140 < len(r["items"]) < 150 and r["how"] == "salvaged json objects"


# -- 2. in-context examples at human scale ---------------------------------------------------------------

@needs_trees
def test_icl_prompt_with_the_largest_real_tree_fits_the_budget():
    trees = {p.name.split(".")[0]: _read_tree(p) for p in sorted(TREES.glob("*.rubric.json"))}
    assert len(trees) == 10
    target = rubrics.load_papers("sample")[0]
    base = len(rubrics.icl_prompt(target, []))
    for name in ("pinn", "what-will-my-model-forget"):
        ex = dict(id=name, title=name, tree=trees[name])
        v = rubrics.example_views([ex])[0]
        assert 60 <= v["total"] <= 100, (name, v["total"])
        ex_text = rubrics.examples_text([ex])
        assert len(ex_text) <= rubrics.EXAMPLE_CHARS, (name, len(ex_text))
        assert len(rubrics.icl_prompt(target, [ex])) - base <= rubrics.EXAMPLE_CHARS
        imps = {i["importance"] for i in v["items"]}
        assert imps == {1, 2, 3, 4, 5}, imps                             # quintiles, not a min-max rescale
    # two examples and a tighter budget: each gets an equal share, cut evenly, and the prompt says so
    exs = [dict(id=n, title=n, tree=trees[n]) for n in ("pinn", "lbcs")]
    text = rubrics.examples_text(exs, 80, 12_000)
    assert len(text) <= 12_000 and text.count("cut evenly to fit") == 2
    views = rubrics.example_views(exs, 80, 12_000)
    assert all(len(v["items"]) < v["total"] for v in views) and all({i["importance"] for i in v["items"]} == {1, 2, 3, 4, 5} for v in views)
    # the agent's example files are the same views within the same budget
    assert len(rubrics._example_file(rubrics.example_views([exs[0]])[0])) <= rubrics.EXAMPLE_CHARS + 200


# -- 4. the distilled skill ------------------------------------------------------------------------------

def test_check_skill_rejects_actions_and_replies():
    assert rubrics.check_skill(BAD_SKILL).startswith("a JSON action / tool call")
    assert rubrics.check_skill("```json\n" + BAD_SKILL + "\n```").startswith("a JSON action")
    assert rubrics.check_skill("I'm ready to help! What paper would you like a rubric for?").startswith("a chat reply")
    assert rubrics.check_skill("") == "empty skill document" and rubrics.check_skill(None) == "empty skill document"
    assert rubrics.check_skill("# Skill\n1. Read the paper.").startswith("too short")
    assert rubrics.check_skill(GOOD_SKILL) is None
    assert rubrics.check_skill(GOOD_SKILL + '\nAn item looks like {"criterion": "...", "importance": 5, "category": "Code Development"}.') is None


def test_strongest_model_and_unused_skill_model():
    cfg = rubrics.RubricsConfig(model="small", judge="big")
    specs = {"small": ModelSpec("small", "http://x/v1", "s", price_out=0.6), "big": ModelSpec("big", "http://x/v1", "b", price_out=10.0)}
    name, why = rubrics.strongest_model(cfg, specs)
    assert name == "big" and "highest price_out" in why
    free = {n: ModelSpec(n, "http://x/v1", n) for n in ("small", "big")}
    name, why = rubrics.strongest_model(cfg, free)
    assert name == "small" and "the model under test" in why              # all equal (e.g. all local): the model under test
    assert rubrics.strongest_model(rubrics.RubricsConfig(model="small", judge="big", skill_model="other"), specs)[0] == "other"
    b = get_benchmark("rubrics")
    with pytest.raises(ConfigError, match="would not be used"): b.make_config(dict(skill_model="gpt-4o-mini", settings="direct"))
    with pytest.raises(ConfigError, match="retired"): b.make_config(dict(skill_file="s.md"))
    for params in (dict(max_steps=-1), dict(obs_chars=10), dict(embedder="openai:")):
        with pytest.raises(ConfigError): b.make_config(params)


def skill_reply(skill_text):
    "A fake model: rubrics from sentences, a write-then-finish agent, `skill_text` as the skill document, pass/fail grades."
    def reply(body):
        sysmsg = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        last = body["messages"][-1]["content"]
        if "## Criterion" in last: return json.dumps({"answer": "pass", "rationale": "ok"})
        if "skill document" in last: return skill_text
        if "workspace" in sysmsg:
            n = sum(m["role"] == "assistant" for m in body["messages"])
            if n == 0: return json.dumps({"thought": "w", "tool": "write_file", "path": "rubric.json", "content": json.dumps(item(1))})
            return json.dumps({"thought": "done", "tool": "finish"})
        return json.dumps({"items": [item(i) for i in range(3)]})
    return reply


class EmbedHandler(BaseHTTPRequestHandler):
    "A minimal OpenAI-compatible /v1/embeddings endpoint: hashed bag-of-words vectors (deterministic, not normalized)."
    seen: list = []
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(dict(path=self.path, auth=self.headers.get("Authorization"), body=body))
        if self.path != "/v1/embeddings": self.send_response(404); self.end_headers(); return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, t in enumerate(texts):
            v = np.zeros(64)
            for w in re.findall(r"[a-z0-9]+", t.lower()): v[sum(map(ord, w)) % 64] += 3.0
            data.append({"object": "embedding", "index": i, "embedding": (v + 0.01).tolist()})
        out = json.dumps({"object": "list", "data": data[::-1], "model": body["model"],      # out of order: sorted by index
                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)


@pytest.fixture
def embed_server():
    EmbedHandler.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), EmbedHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown(); srv.server_close()


def registry(tmp_path, monkeypatch, chat_url, emb_url=None, extra=""):
    reg = tmp_path/"models.toml"
    text = f'[models.fake]\nbase_url = "{chat_url}"\nmodel = "fake"\nmax_retries = 0\n' + extra
    if emb_url: text += f'[models.emb]\nbase_url = "{emb_url}"\nmodel = "tiny-embed"\napi_key_env = "SCIBENCH_TEST_EMB_KEY"\nmax_retries = 0\n'
    reg.write_text(text)
    monkeypatch.setenv("SCIBENCH_MODELS", str(reg))


# -- 7. the embedder ---------------------------------------------------------------------------------------

def test_openai_embeddings_endpoint(embed_server, tmp_path, monkeypatch):
    from scibench import retrieval
    registry(tmp_path, monkeypatch, "http://127.0.0.1:9/v1", embed_server)
    monkeypatch.setenv("SCIBENCH_TEST_EMB_KEY", "sk-test-123")
    retrieval._load.cache_clear()
    E = retrieval.embed(["train the model", "train the model", "plot the results"] * 30, model="openai:emb", batch_size=32)
    assert E.shape == (90, 64) and E.dtype == np.float32 and np.allclose(np.linalg.norm(E, axis=1), 1, atol=1e-5)
    assert float(E[0] @ E[1]) == pytest.approx(1.0, abs=1e-5) and float(E[0] @ E[2]) < 0.9
    assert len(EmbedHandler.seen) == 3 and all(s["auth"] == "Bearer sk-test-123" and s["body"]["model"] == "tiny-embed" for s in EmbedHandler.seen)
    # the intrinsic metrics with this embedder
    g, r = ["train the model"], ["train the model", "plot the results"]
    m = rubrics.intrinsic(g, r, embedder="openai:emb")
    assert m["precision@0.7"] == 1.0 and m["recall@0.7"] == 0.5
    assert rubrics.embed_map(g, "openai:emb")["train the model"].shape == (64,)
    # a missing key or an unknown registry name is a clear error
    monkeypatch.delenv("SCIBENCH_TEST_EMB_KEY")
    with pytest.raises(RuntimeError, match="SCIBENCH_TEST_EMB_KEY"): retrieval.embed(["x"], model="openai:emb")
    with pytest.raises(ValueError, match="not in the registry"): retrieval.embed(["x"], model="openai:nosuch")
    retrieval._load.cache_clear()
    # the default is unchanged for AutoBench and ArxivBench (no model argument)
    assert retrieval.embed(["x"]).shape == (1, 384) and retrieval.embedder() is retrieval.embedder("all-MiniLM-L6-v2")


def test_run_rejects_bad_skill_and_records_embedder(fake_server, embed_server, tmp_path, monkeypatch, run_bench, results):
    "The committed-style skill document is rejected: a recorded failure, the skill setting not run; the embedder is recorded and captioned."
    from scibench import retrieval
    fs = fake_server(reply=skill_reply(BAD_SKILL))
    registry(tmp_path, monkeypatch, fs.base_url, embed_server)
    monkeypatch.setenv("SCIBENCH_TEST_EMB_KEY", "sk-test-123")
    retrieval._load.cache_clear()
    meta, out = run_bench("rubrics", dict(model="fake", judge="fake", settings="direct", k=2, judge_eval=False, embedder="openai:emb"))
    assert meta["status"] == "complete"
    recs = [json.loads(l) for l in (out/"records.jsonl").read_text().splitlines()]
    assert all(r["embedder"] == "openai:emb" for r in recs) and meta["config"]["embedder"] == "openai:emb"
    assert json.loads((out/"scores.json").read_text())["embedder"] == "openai:emb"
    assert all(r["intrinsic"]["f1@0.7"] is not None for r in recs if r["setting"] == "direct")
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path/"fig"))
    rubrics.write_tables()
    for t in ("rubrics_table2", "rubrics_table5_6"):
        md = (results/"tables"/f"{t}.md").read_text()
        assert "not comparable across embedders" in md and "these runs: openai:emb" in md and "Qwen3-Embedding-8B" in md, t
    import pandas as pd
    t2 = pd.read_csv(results/"tables"/"rubrics_table2.csv")
    assert set(t2["embedder"]) == {"openai:emb", "Qwen3-Embedding-8B"}
    # the skill setting with the committed-style document
    meta, out = run_bench("rubrics", dict(model="fake", judge="fake", settings="skill", k=2, max_steps=3, judge_eval=False, embedder="openai:emb"))
    s = json.loads((out/"scores.json").read_text())
    assert s["skill"]["used"] is False and s["skill"]["failure"].startswith("skill document rejected: a JSON action")
    assert s["skill"]["model"] == "fake" and "the model under test" in s["skill"]["model_choice"]
    assert not (out/"skill.md").exists() and not (out/"transcripts"/"skill").exists()          # the skill setting was not run
    dist = json.loads((out/"transcripts"/"skill_distillation.json").read_text())
    assert dist["rejected"] == BAD_SKILL and dist["skill"] is None
    recs = [json.loads(l) for l in (out/"records.jsonl").read_text().splitlines()]
    sk = [r for r in recs if r["setting"] == "skill"]
    assert len(sk) == 2 and all(r["failure"].startswith("no skill document: skill document rejected") and not r["items"] for r in sk)
    assert meta["failures"] == 2 and meta["status"] != "complete"
    retrieval._load.cache_clear()
    # a good document is used, by the strongest configured model
    fs2 = fake_server(reply=skill_reply(GOOD_SKILL))
    registry(tmp_path, monkeypatch, fs2.base_url, extra=f'[models.big]\nbase_url = "{fs2.base_url}"\nmodel = "big"\nmax_retries = 0\nprice_out = 10.0\n')
    meta, out = run_bench("rubrics", dict(model="fake", judge="big", settings="skill", k=2, max_steps=3, judge_eval=False))
    s = json.loads((out/"scores.json").read_text())
    assert s["skill"]["used"] is True and s["skill"]["failure"] is None and s["skill"]["model"] == "big"
    assert (out/"skill.md").read_text() == GOOD_SKILL and "skill_model:big" in meta["usage"]
    plan = {r["role"]: r["model"] for r in meta["plan"]}
    assert plan == {"model": "fake", "skill_model": "big", "judge": "big"}


# -- issue 13 item 7: intrinsic metrics at PaperBench scale ----------------------------------------------

def test_bit_parallel_lcs_matches_rouge_score_on_long_references():
    "References of more than 64 and 128 tokens (multi-word bit vectors) give rouge_score's exact ROUGE-L."
    from rouge_score import rouge_scorer
    g = rubrics_perf._synthetic_rubric(12, 1)
    r = rubrics_perf._synthetic_rubric(6, 2) + [" ".join(rubrics_perf._synthetic_rubric(8, 3)), " ".join(rubrics_perf._synthetic_rubric(15, 4)), "loss", "!!"]
    assert max(len(t.split()) for t in r) > 128
    r1, rl = metrics.rouge_matrices(g, r)
    sc = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    for i, a in enumerate(g):
        for j, b in enumerate(r):
            s = sc.score(b, a)
            assert rl[i, j] == pytest.approx(s["rougeL"].fmeasure, abs=1e-9) and r1[i, j] == pytest.approx(s["rouge1"].fmeasure, abs=1e-9)


def test_embeddings_cached_across_runs(tmp_path, monkeypatch):
    "A second embed_map of the same texts (another setting, another run) embeds nothing; new texts only are embedded."
    from scibench import retrieval
    calls = []
    real = retrieval.embed
    monkeypatch.setattr(retrieval, "embed", lambda texts, *a, **k: calls.append(list(texts)) or real(texts, *a, **k))
    texts = ["Implement the loss", "Train three seeds", "Report accuracy"]
    e1 = rubrics.embed_map(texts, cache=True)
    e2 = rubrics.embed_map(texts[::-1] + ["A new criterion"], cache=True)
    assert calls == [texts, ["A new criterion"]]
    assert all(np.allclose(e1[t], e2[t]) for t in texts)
    assert (tmp_path/"cache"/"embeddings.sqlite").exists()       # SCIBENCH_CACHE of the test
