"""Batch mode (the OpenAI-compatible Batch API) against the fake server: same answers and cache as live calls, split
into input files within the limits, failures recorded with reasons, kill and resume, half price, `scibench run --batch`."""
import json, signal, subprocess, sys, time
from pathlib import Path
import pytest
from scibench.llm import LLM, Cache, ModelSpec, Request, msgs, cache_key, load_registry, BATCH_MAX_REQUESTS, BATCH_MAX_BYTES

ROOT = Path(__file__).resolve().parent.parent
POLL = 0.05


def spec_for(fs, **kw):
    return ModelSpec("fake", fs.base_url, "fake", **{"price_in": 1.0, "price_out": 2.0, "max_retries": 2, "timeout": 10, **kw})


def reqs(n, prefix="question"):
    return [Request(msgs(f"{prefix} {i} " + "word " * i)) for i in range(n)]


def batch_llm(spec, cache, **kw):
    return LLM(spec, cache=cache, progress=False, batch=True, batch_poll=POLL, **kw)


def test_limits_are_openais():
    assert (BATCH_MAX_REQUESTS, BATCH_MAX_BYTES) == (50_000, 200_000_000)


def test_batch_answers_equal_live_and_share_the_cache(fake_server, tmp_path):
    fs = fake_server(batch_delay=0.1)
    spec, rs = spec_for(fs), reqs(12) + reqs(3)   # 3 duplicates: sent once
    live = LLM(spec, cache=Cache(tmp_path / "live.sqlite"), progress=False).map(rs)
    assert fs.calls == 12 and fs.batches_created == 0
    batch = batch_llm(spec, Cache(tmp_path / "batch.sqlite")).map(rs)
    assert fs.calls == 12 and fs.batches_created == 1   # no live call in batch mode; one batch
    assert [r["text"] for r in batch] == [r["text"] for r in live]
    assert [r["ok"] for r in batch] == [True] * 15 and all(r["batch"] for r in batch)
    assert [r["cached"] for r in batch] == [False] * 12 + [True] * 3
    assert set(fs.batch_lines.values()) == {1} and len(fs.batch_lines) == 12
    assert set(fs.batch_lines) == {cache_key(spec, r) for r in rs}   # custom_id = the cache key
    assert batch[0]["usage"] == live[0]["usage"]
    # batch mode on the live cache: all hits, nothing submitted; live mode on the batch cache: all hits, nothing sent
    again = batch_llm(spec, Cache(tmp_path / "live.sqlite")).map(rs)
    assert all(r["cached"] for r in again) and fs.batches_created == 1
    back = LLM(spec, cache=Cache(tmp_path / "batch.sqlite"), progress=False).map(rs)
    assert all(r["cached"] for r in back) and fs.calls == 12
    assert [r["text"] for r in back] == [r["text"] for r in live]


def test_structured_request_body_is_the_live_one(fake_server):
    fs = fake_server(batch_delay=0.05, reply=lambda body: json.dumps({"score": 4, "rf": body.get("response_format", {}).get("type")}))
    spec = spec_for(fs, structured="json_schema")
    r = batch_llm(spec, False).map([Request(msgs("rate it"), schema={"type": "object"}, stop=["\n\n"], max_tokens=7)])[0]
    assert r["ok"] and json.loads(r["text"]) == {"score": 4, "rf": "json_schema"} and r["structured"] is True
    line = json.loads(next(v for v in fs.files.values() if b'"custom_id"' in v and b'"method"' in v))
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert line["body"] == LLM(spec, cache=False).body(Request(msgs("rate it"), schema={"type": "object"}, stop=["\n\n"], max_tokens=7))


def test_split_into_batches_within_limits(fake_server, tmp_path):
    fs = fake_server(batch_delay=0.05)
    spec = spec_for(fs)
    res = batch_llm(spec, Cache(tmp_path / "c.sqlite"), batch_max_requests=4).map(reqs(10))
    assert all(r["ok"] for r in res) and fs.batches_created == 3
    inputs = [fs.files[b["input_file_id"]] for b in fs.batches.values()]
    assert sorted(len(f.splitlines()) for f in inputs) == [2, 4, 4]
    # by bytes: every input file at most 600 bytes
    fs2 = fake_server(batch_delay=0.05)
    res = batch_llm(spec_for(fs2), Cache(tmp_path / "d.sqlite"), batch_max_bytes=600).map(reqs(10))
    assert all(r["ok"] for r in res)
    inputs = [fs2.files[b["input_file_id"]] for b in fs2.batches.values()]
    assert fs2.batches_created == len(inputs) > 2 and all(len(f) <= 600 for f in inputs)
    assert sum(len(f.splitlines()) for f in inputs) == 10


def test_partial_failure_and_expiry_are_failure_records(fake_server, tmp_path):
    fs = fake_server(batch_delay=0.05, permanent="PERM", batch_error="BOOM", batch_expire="LATE", batch_missing="GONE")
    spec = spec_for(fs)
    rs = reqs(3) + [Request(msgs(x)) for x in ("PERM", "BOOM", "LATE", "GONE")]
    cache = Cache(tmp_path / "c.sqlite")
    llm = batch_llm(spec, cache, batch_max_requests=4)   # the LATE line expires its batch; the other batch completes
    res = llm.map(rs)
    assert [r["ok"] for r in res] == [True] * 3 + [False] * 4
    errs = [r["error"] for r in res[3:]]
    assert errs[0].startswith("batch: http 400:") and "permanent fault" in errs[0]
    assert errs[1].startswith("batch: http 500:")
    assert errs[2] == "batch expired: no answer within the completion window"
    assert errs[3] == "batch expired: no answer within the completion window"   # missing line of an expired batch
    assert sorted(b["status"] for b in fs.batches.values()) == ["completed", "expired"]
    assert (llm.usage.requests, llm.usage.failures, llm.usage.batch_calls) == (7, 4, 7)
    assert cache.count() == 3   # failures are not cached
    assert {r["status"] for r in cache.batches(pending=False)} == {"collected"}
    # a rerun sends only the failed requests again, in one new batch
    res2 = batch_llm(spec, cache).map(rs)
    assert [r["cached"] for r in res2] == [True] * 3 + [False] * 4 and fs.batches_created == 3
    assert len(fs.files[list(fs.batches.values())[-1]["input_file_id"]].splitlines()) == 4


def test_missing_line_of_a_completed_batch(fake_server):
    fs = fake_server(batch_delay=0.05, batch_missing="GONE")
    res = batch_llm(spec_for(fs), False).map([Request(msgs("GONE")), Request(msgs("here"))])
    assert res[0]["error"] == "batch completed: no result line for this request" and res[1]["ok"]


def test_batch_api_missing_is_a_failure_per_request(fake_server):
    fs = fake_server()
    spec = ModelSpec("fake", fs.base_url + "/nobatch/v1", "fake", max_retries=0)   # this server answers 404 to /files
    res = batch_llm(spec, False).map(reqs(3))
    assert [r["ok"] for r in res] == [False] * 3
    assert all(r["error"].startswith("batch submission failed: http 404") for r in res), res[0]["error"]


def test_cost_is_half_the_live_price(fake_server, tmp_path):
    fs = fake_server(batch_delay=0.05)
    spec = spec_for(fs)
    live = LLM(spec, cache=False, progress=False); live.map(reqs(6))
    batch = batch_llm(spec, False); batch.map(reqs(6))
    assert batch.usage.prompt_tokens == live.usage.prompt_tokens > 0
    assert batch.usage.batch_calls == 6 and live.usage.batch_calls == 0
    assert abs(batch.usage.cost_usd - 0.5 * live.usage.cost_usd) < 1e-12 and live.usage.cost_usd > 0
    other = batch_llm(spec_for(fs, batch_price=0.4), False); other.map(reqs(6, "other"))
    assert abs(other.usage.cost_usd - 0.4 * (other.usage.prompt_tokens * 1.0 + other.usage.completion_tokens * 2.0) / 1e6) < 1e-12


def test_registry_batch_fields(tmp_path, fake_server):
    fs = fake_server(batch_delay=0.05)
    p = tmp_path / "models.toml"
    p.write_text(f'[models.b]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nbatch = true\nbatch_price = 0.5\n')
    spec = load_registry(p)["b"]
    llm = LLM(spec, cache=False, progress=False, batch_poll=POLL)
    assert llm.batch and llm.map(reqs(2))[0]["batch"] and fs.batches_created == 1 and fs.calls == 0
    assert not LLM(spec, cache=False, batch=False).batch
    p.write_text(f'[models.b]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nbatch_price = 2\n')
    with pytest.raises(ValueError, match=r"model 'b': field 'batch_price' must be a number in \[0, 1\]"): load_registry(p)
    p.write_text(f'[models.b]\nbase_url = "{fs.base_url}"\nmodel = "fake"\nbatch = "yes"\n')
    with pytest.raises(ValueError, match="field 'batch' must be true or false"): load_registry(p)


def test_batch_unknown_to_the_endpoint_is_submitted_again(fake_server, tmp_path):
    fs = fake_server(batch_delay=0.05)
    spec, rs = spec_for(fs), reqs(3)
    cache = Cache(tmp_path / "c.sqlite")
    from scibench.batch import batch_scope
    keys = [cache_key(spec, r) for r in rs]
    cache.batch_record("k", batch_scope(spec), "batch_from_another_server", "file-x", "in_progress", keys)
    res = batch_llm(spec, cache).map(rs)
    assert all(r["ok"] for r in res) and fs.batches_created == 1
    st = {r["batch_id"]: r["status"] for r in cache.batches(pending=False)}
    assert st.pop("batch_from_another_server") == "lost" and list(st.values()) == ["collected"]


CLIENT = """
import json, sys
from scibench.llm import LLM, ModelSpec, Request, msgs
llm = LLM(ModelSpec("fake", sys.argv[1], "fake"), progress=False, batch=True, batch_poll=0.05)
print(json.dumps(llm.map([Request(msgs(f"q{i}")) for i in range(int(sys.argv[2]))])))
"""


def test_kill_after_submission_and_resume(fake_server, tmp_path, cli):
    fs = fake_server(batch_delay=3.0)
    p = subprocess.Popen([sys.executable, "-c", CLIENT, fs.base_url, "6"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        t0 = time.time()
        while fs.batch_polls == 0 and time.time() - t0 < 60 and p.poll() is None: time.sleep(0.02)
        assert fs.batch_polls > 0, p.stderr.read().decode() if p.poll() is not None else "the client never polled"
    finally:
        p.send_signal(signal.SIGKILL); p.wait(10)
    assert fs.batches_created == 1 and not fs.batch_lines   # submitted, not yet answered
    pending = Cache().batches()
    assert len(pending) == 1 and pending[0]["status"] in ("validating", "in_progress")
    info = cli("cache").stdout
    assert "1 Batch API batch(es) submitted and not yet collected" in info, info
    # the rerun (a new process: the same command) resumes polling that batch: nothing submitted twice
    r = subprocess.run([sys.executable, "-c", CLIENT, fs.base_url, "6"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert [x["ok"] for x in res] == [True] * 6 and fs.batches_created == 1 and fs.calls == 0
    assert set(fs.batch_lines.values()) == {1} and len(fs.batch_lines) == 6
    assert Cache().batches() == [] and Cache().count() == 6


def test_resume_takes_a_batch_that_holds_any_request(fake_server, tmp_path):
    "A rerun asking fewer requests still resumes the pending batch (no second submission) and caches all its answers."
    fs = fake_server(batch_delay=0.3)
    spec, rs = spec_for(fs), reqs(4)
    cache = Cache(tmp_path / "c.sqlite")
    import asyncio
    from scibench.llm import run_sync
    async def submit_then_cancel():
        t = asyncio.ensure_future(batch_llm(spec, cache).amap(rs))
        while fs.batch_polls == 0: await asyncio.sleep(0.01)
        t.cancel()
        try: await t
        except asyncio.CancelledError: pass
    run_sync(submit_then_cancel())
    assert fs.batches_created == 1 and len(cache.batches()) == 1
    res = batch_llm(spec, cache).map(rs[:2])
    assert all(r["ok"] for r in res) and fs.batches_created == 1 and cache.count() == 4


def test_scibench_run_abgen_batch_end_to_end(fake_server, tmp_path, cli):
    fs = fake_server(batch_delay=0.1)
    env = {"SCIBENCH_RESULTS": str(tmp_path / "results"), "SCIBENCH_BATCH_POLL": str(POLL)}
    r = cli("run", "abgen", "--batch", "--no-notebook", "--model", "fake", "--base-url", fs.base_url,
            "--served-model", "fake", "--judge", "fakejudge", "--judge-base-url", fs.base_url, "--judge-served-model", "fake",
            "--max-tokens", "32", "--judge-max-tokens", "32", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    meta = json.loads(next((tmp_path / "results").glob("abgen/sample/fake/*/meta.json")).read_text())
    u = meta["usage"]["total"]
    assert meta["status"] == "complete" and meta["n"] == 8
    assert u["batch_calls"] == u["calls"] == 8 + 8 * 4 and u["failures"] == 0
    assert fs.calls == 0 and fs.batches_created == 2   # generation, then the judge: one batch each
    assert meta["models"]["fake"]["batch"] is True and meta["models"]["fakejudge"]["batch"] is True
    assert "by Batch API" in r.stdout


def test_dry_run_plan_at_batch_price_and_embedded_stays_live(tmp_path, monkeypatch, capsys):
    p = tmp_path / "models.toml"
    p.write_text('[models.paid]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nprice_in = 100.0\nprice_out = 200.0\n'
                 '[models.emb]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "e"\nembedded = true\n')
    monkeypatch.setenv("SCIBENCH_MODELS", str(p))
    from scibench.run import execute
    live = execute("abgen", dict(model="paid", judge="paid"), dry_run=True)
    batch = execute("abgen", dict(model="paid", judge="paid"), dry_run=True, batch=True)
    cost = lambda m: sum(r["cost_usd"] for r in m["plan"])
    assert cost(live) > 1 and cost(batch) == pytest.approx(0.5 * cost(live), rel=1e-3)
    assert batch["models"]["paid"]["batch"] is True and live["models"]["paid"]["batch"] is False
    mixed = execute("abgen", dict(model="paid", judge="emb"), dry_run=True, batch=True)
    assert mixed["models"]["emb"]["batch"] is False and mixed["models"]["paid"]["batch"] is True
    assert "model 'emb' is the embedded server (no Batch API): its calls go live" in capsys.readouterr().err


def test_failed_batch_fails_each_request_with_the_reason(fake_server, tmp_path):
    fs = fake_server(batch_delay=0.05, batch_reject="HUGE")
    cache = Cache(tmp_path / "c.sqlite")
    res = batch_llm(spec_for(fs), cache, batch_max_requests=2).map([Request(msgs(x)) for x in ("a", "HUGE", "b", "c")])
    assert [r["ok"] for r in res] == [False, False, True, True]
    assert res[0]["error"] == "batch failed: token_limit_exceeded: Enqueued token limit reached for fake."
    assert cache.count() == 2 and cache.batches() == []


def test_pipeline_in_batch_mode_sends_one_batch_per_stage(fake_server, tmp_path):
    "Issue 13 item 2 in batch mode: every item reaches its first call at once, so a stage is one batch (not one per item)."
    import asyncio
    from scibench.llm import pipeline
    fs = fake_server(batch_delay=0.1)
    spec = spec_for(fs)
    gen, jud = batch_llm(spec, Cache(tmp_path / "c.sqlite")), batch_llm(spec, Cache(tmp_path / "c.sqlite"))
    async def item(i):
        g = await gen.acall(Request(msgs(f"design {i}")))
        js = await asyncio.gather(*(jud.acall(Request(msgs(f"judge {i} {c}: {g['text']}"))) for c in "abcd"))
        return g, js
    res = pipeline(range(30), item, [gen, jud])
    assert fs.batches_created == 2 and fs.calls == 0             # generation, then judging: one batch each, no live call
    assert all(g["ok"] and g["batch"] for g, _ in res) and all(j["ok"] for _, js in res for j in js)
    assert (gen.usage.batch_calls, jud.usage.batch_calls) == (30, 120)
    again = pipeline(range(30), item, [gen, jud])                 # all from the cache: no new batch
    assert fs.batches_created == 2 and [g["text"] for g, _ in again] == [g["text"] for g, _ in res]


def test_pipeline_window_is_lifted_in_batch_mode(fake_server, tmp_path):
    "AutoBench's flow and pipeline() take their window from pipeline_window: none in batch mode (one batch per stage)."
    from scibench.llm import pipeline_window
    spec = spec_for(fake_server(), max_concurrency=16)
    live, batch = LLM(spec, cache=False, progress=False), batch_llm(spec, Cache(tmp_path / "c.sqlite"))
    assert pipeline_window([live]) == 256 and pipeline_window([live, None]) == 256
    assert pipeline_window([live, batch]) is None
