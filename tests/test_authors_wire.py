"""The rest of each request under protocol `authors` (issue 36): the fields besides the messages, their retry loop, their
`</think>` handling and caps by script (`authors_path`), and reasoning models' completion-cap field everywhere."""
import json
from collections import Counter
from pathlib import Path
import pytest
from scibench.benchmarks.abgen import method as abgen
from scibench.llm import LLM, ModelSpec, Request, msgs
from scibench.run import PreflightError


@pytest.fixture
def data(own_data):
    return own_data("abgen")


def registry(tmp_path, monkeypatch, fs, model="fake-model", extra=""):
    p = tmp_path / "models.toml"
    p.write_text(f'[models.fake]\nbase_url = "{fs.base_url}"\nmodel = "{model}"\nstructured = "json_schema"\n'
                 f'timeout = 5\nmax_retries = 0\n{extra}')
    monkeypatch.setenv("SCIBENCH_MODELS", str(p))


def judged(body) -> bool: return body["messages"][-1]["content"].startswith("\nResearch Context")


def criterion(body) -> str:
    tail = lambda t: t.split("Criterion", 1)[1][:80]
    return next(c for c in abgen.CRITERIA if tail(abgen.SCIBENCH_PROMPTS[c])[:24] in body["messages"][0]["content"])


VALID = '{"explanation": "fine", "score": 4}'


def cut(text='{"explanation": "fi'):
    return {"id": "x", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}]}


# ------------------------------------------------------------------ reasoning models: the completion-cap field
def test_an_o_series_id_sends_max_completion_tokens(fake_server):
    seen = []
    fs = fake_server(reasoning=True, reply=lambda b: seen.append(b) or "ok")
    o4 = LLM(ModelSpec("o", fs.base_url, "o4-mini", structured="none", max_retries=0), cache=False, progress=False)
    r = o4.chat("hi", max_tokens=64)
    assert r["ok"] and seen[-1]["max_completion_tokens"] == 64 and "max_tokens" not in seen[-1]
    old = LLM(ModelSpec("o", fs.base_url, "o4-mini", structured="none", max_retries=0, token_field="max_tokens"),
              cache=False, progress=False)
    bad = old.chat("hi", max_tokens=64)     # what every request got before: HTTP 400, one failure each
    assert not bad["ok"] and "Unsupported parameter: 'max_tokens'" in bad["error"]
    assert LLM(ModelSpec("g", fs.base_url, "gpt-4o", structured="none"), cache=False).body(Request(msgs("q")))[
        "max_tokens"] == 512   # a non-reasoning id elsewhere than api.openai.com: as before


def test_preflight_stops_a_run_on_an_unsupported_parameter(data, fake_server, run_bench, tmp_path, monkeypatch):
    fs = fake_server(reasoning=True, reply=lambda b: VALID if judged(b) else "DESIGN")
    registry(tmp_path, monkeypatch, fs, model="o4-mini", extra='token_field = "max_tokens"\n')
    with pytest.raises(PreflightError) as e:
        run_bench("abgen", dict(model="fake", judge="fake", limit=1))
    msg = str(e.value)
    assert "\n" not in msg and "Unsupported parameter: 'max_tokens'" in msg
    assert msg.endswith('set token_field = "max_completion_tokens" in its models.toml entry') and fs.calls == 0
    registry(tmp_path, monkeypatch, fs, model="o4-mini")   # the default field for an o* id: the run goes through
    meta, _ = run_bench("abgen", dict(model="fake", judge="fake", limit=1))
    assert meta["status"] == "complete", meta.get("status")


# ------------------------------------------------------------------ AbGen: their retry loop, new samples cached apart
def test_abgen_resamples_invalid_and_cut_answers_as_their_loop(data, fake_server, run_bench, tmp_path, monkeypatch):
    tries = Counter()
    missing = '{"explanation": "no score"}'   # JSON, but not their pydantic model: a ValidationError
    script = {"importance": [missing, '{"explanation": "x", "score": "four"}', VALID], "faithfulness": [cut(), VALID],
              "soundness": [missing] * 12, "overall": [VALID]}

    def reply(b):
        if not judged(b): return "DESIGN"
        c = criterion(b)
        tries[c] += 1
        return script[c][min(tries[c], len(script[c])) - 1]
    fs = fake_server(reply=reply)
    registry(tmp_path, monkeypatch, fs)
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=1))
    assert dict(tries) == dict(importance=3, faithfulness=2, soundness=10, overall=1)   # 10 tries, then their 0
    rec = json.loads((Path(d) / "records.jsonl").read_text().splitlines()[0])
    assert rec["resamples"] == dict(importance=2, faithfulness=1, soundness=9, overall=0)
    assert rec["scores"] == dict(importance=4, faithfulness=4, soundness=None, overall=4)
    assert "re-sampled" in rec["failures"]["soundness"]
    prov = json.loads((Path(d) / "meta.json").read_text())["provenance"]["protocol"]
    assert prov["resamples"] == 12 and any("retry loop" in x for x in prov["differences"])
    html = (Path(d) / "report.html").read_text()
    assert "their retry loop is kept" in html and "identical" not in html
    n = fs.calls
    meta2, _ = run_bench("abgen", dict(model="fake", judge="fake", limit=1))   # every sample cached apart: no call
    assert fs.calls == n and meta2["status"] == meta["status"]   # (a criterion failed: over the failure share)


# ------------------------------------------------------------------ AbGen: their scripts (authors_path), seed, notes
def test_abgen_vllm_path_caps_and_think(data, fake_server, run_bench, tmp_path, monkeypatch):
    bodies = []
    fs = fake_server(reply=lambda b: bodies.append(b) or (VALID if judged(b) else "<think>plan</think>\n DESIGN \n"))
    registry(tmp_path, monkeypatch, fs)
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=1, authors_path="vllm", seed=3))
    gen = [b for b in bodies if not judged(b)][0]
    assert gen == dict(model="fake-model", messages=gen["messages"], temperature=1.0, max_tokens=1024, seed=3)
    judge = [b for b in bodies if judged(b)]
    assert all(b["max_completion_tokens"] == 8192 and b["seed"] == 3 for b in judge)   # evaluation.py: api
    rec = json.loads((Path(d) / "records.jsonl").read_text().splitlines()[0])
    assert rec["design"] == "DESIGN"     # vllm_inference.py: after </think>, stripped
    notes = json.loads((Path(d) / "meta.json").read_text())["provenance"]["protocol"]["notes"]
    assert "--seed 3: the seed is sent (theirs: none)" in notes


def test_their_think_handling():
    t = "<think>a</think>\n b \n"
    assert abgen.authors_text(t, "api", "gpt-4.1-mini") == t                       # kept whole
    assert abgen.authors_text(t, "api", "Qwen/Qwen3-235B-A22B-fp8-tput") == "b"    # _call_llm_unstructured
    assert abgen.authors_text(" plain \n", "vllm") == "plain"
    assert abgen.authors_text("<think>unclosed", "vllm") == "<think>unclosed"
    assert abgen.authors_text("x</think>y</think> z ", "vllm", judge=True) == "z"  # vllm_meta_evaluation.py


def test_the_embedded_servers_departures_are_listed():
    cfg = abgen.AbGenConfig()
    abgen.validate(cfg)
    local = ModelSpec("local", "http://127.0.0.1:8765/v1", "smollm2", embedded=True, structured="llama")
    notes = abgen.protocol_notes(cfg, local, local)["notes"]
    for role in ("judge", "model"):
        assert any(n.startswith(f"{role} 'local': the cap is sent as max_tokens") for n in notes)
        assert any(n.startswith(f"{role} 'local': the seed is sent to the embedded server") for n in notes)
    body = LLM(local, cache=False).body(abgen.setup_of(cfg, local, local).request(abgen.load_abgen("sample")[0]))
    assert body["max_tokens"] == 2048 and body["seed"] == 0 and "max_completion_tokens" not in body


def test_abgen_eval_vllm_judge_is_text_with_their_cap(data, fake_server, run_bench, tmp_path, monkeypatch):
    bodies = []
    fs = fake_server(reply=lambda b: bodies.append(b) or "<think>weigh it</think>\nTherefore, the score is: 4")
    registry(tmp_path, monkeypatch, fs)
    meta, d = run_bench("abgen_eval", dict(model="fake", limit=1, authors_path="vllm"))
    assert bodies and all(b == dict(model="fake-model", messages=b["messages"], temperature=1.0, max_tokens=4096)
                          for b in bodies)   # vllm_meta_evaluation.py: SamplingParams(temperature=1, max_tokens=4096)
    out = json.loads((Path(d) / "judge_outputs.json").read_text())
    assert {o[c]["score"] for o in out for c in abgen.CRITERIA} == {4}   # after </think>, then score_extraction.py
    assert json.loads((Path(d) / "meta.json").read_text())["provenance"]["protocol"]["resamples"] == 0


def test_arxivbench_sends_no_seed_and_lists_the_endpoints_departures():
    from scibench.benchmarks.arxivbench import method as ab
    api = ModelSpec("gpt", "http://127.0.0.1:9/v1", "gpt-4o", structured="none")
    q, j = ab.query_request("p", protocol="authors"), ab.authors_judge_request("p", "t", dict(title="T", abstract="A"))
    for r in (q, j):
        body = LLM(api, cache=False).body(r)
        assert "seed" not in body and body["max_tokens"] in (1000, 1)   # openai 1.35.1: max_tokens, no seed
    assert "seed" in LLM(api, cache=False).body(ab.query_request("p", protocol="authors", seeded=True))
    local = ModelSpec("local", "http://127.0.0.1:8765/v1", "smollm2", embedded=True, structured="llama")
    cfg = ab.ArxivBenchConfig()
    notes = ab.protocol_notes(cfg, local, local)["notes"]
    assert any(n.startswith("model 'local': the seed is sent to the embedded server") for n in notes)
    cfg.seed = 2
    assert "--seed 2: the seed is sent (theirs: none)" in ab.protocol_notes(cfg, local, local)["notes"]
    scib = ab.protocol_notes(ab.ArxivBenchConfig(protocol="scibench"))["differences"]
    assert any("identical requests" in x for x in scib) and any("1,500 characters" in x for x in scib)
