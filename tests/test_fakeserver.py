"""The fake OpenAI-compatible server of the development lab (`bench/fakeserver.py`): its faults are survived by the
client, its latency draws are lognormal and fixed by the request, its prefix cache, its llama.cpp and refusing
structured modes, and its Batch API's lifecycle."""
import hashlib, json, math, statistics, time
import httpx, openai, pytest
from fastcore.test import test_eq as eq
from bench.fakeserver import FakeServer
from scibench.llm import LLM, ModelSpec, Request, msgs


def test_faults_are_retried_and_every_request_completes_once():
    with FakeServer(fault_rate=0.3, faults=("429", "500", "reset", "html", "array", "nochoices", "badjson"), hang=2) as fs:
        spec = ModelSpec("fake", fs.base_url, "fake", max_retries=5, timeout=5)
        res = LLM(spec, cache=False, progress=False).map([Request(msgs(f"q{i}")) for i in range(40)])
        eq(all(r["ok"] for r in res), True)
        eq(set(fs.completions.values()), {1})
        assert fs.calls > 40, fs.calls  # some attempts were faults


def test_lognormal_latency_is_drawn_from_the_request_hash():
    fs = FakeServer(latency_dist=("lognormal", 0.2, 1.0))
    ds = [fs.delay(hashlib.sha256(str(i).encode()).hexdigest()) for i in range(20_000)]
    assert abs(statistics.median(ds) / 0.2 - 1) < 0.05 and abs(statistics.fmean(ds) / (0.2 * math.exp(0.5)) - 1) < 0.05
    eq(fs.delay("ab" * 32), fs.delay("ab" * 32))
    eq(FakeServer(latency=0.05).delay("ab" * 32), 0.05)
    with pytest.raises(ValueError):
        FakeServer(latency_dist=("normal", 0.2, 1.0))
    with pytest.raises(ValueError):
        FakeServer(faults=("teapot",))


def test_prefix_cache_counts_leading_blocks_seen_before():
    with FakeServer(prefix_cache=True) as fs:
        llm = LLM(ModelSpec("fake", fs.base_url, "fake", price_in=1.0, price_cached=0.1), cache=False, progress=False)
        stable = " ".join(f"w{i}" for i in range(64))
        r1, r2 = llm.map([Request(msgs(stable + " first question"))]) + llm.map([Request(msgs(stable + " second question"))])
        eq((r1["usage"].get("prefix_cached_tokens", 0), r2["usage"]["prefix_cached_tokens"]), (0, 64))
        eq(llm.usage.prefix_cached_tokens, 64)


def test_llama_mode_follows_a_schema_and_reject_mode_refuses():
    schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}}
    body = dict(model="fake", messages=[{"role": "user", "content": "judge"}],
                response_format={"type": "json_object", "schema": schema})
    with FakeServer(structured="llama") as fs:
        eq("default_generation_settings" in httpx.get(fs.base_url.removesuffix("/v1") + "/props").json(), True)
        eq(httpx.post(fs.base_url + "/chat/completions", json=body).json()["choices"][0]["message"]["content"],
                '{"score": 3}')
    with FakeServer(structured="reject") as fs:
        eq(httpx.post(fs.base_url + "/chat/completions", json=body).status_code, 400)


def test_batch_goes_validating_in_progress_completed():
    with FakeServer(batch_delay=0.2) as fs:
        c = openai.OpenAI(base_url=fs.base_url, api_key="x")
        line = {"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": "fake", "messages": msgs("hello")}}
        f = c.files.create(file=("in.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch")
        b = c.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
        seen = [b.status]
        while b.status not in ("completed", "failed", "expired"):
            time.sleep(0.05)
            b = c.batches.retrieve(b.id)
            if b.status != seen[-1]:
                seen.append(b.status)
        out = json.loads(c.files.content(b.output_file_id).text)
        eq(seen, ["validating", "in_progress", "completed"])
        eq((out["custom_id"], out["response"]["status_code"]), ("r1", 200))
        eq(out["response"]["body"]["choices"][0]["message"]["content"], "Rationale: fine. Therefore, the score is: 1")
        eq((fs.batches_created, fs.calls), (1, 0))
        eq([x.id for x in c.batches.list(limit=5)], [b.id])
        eq(httpx.get(fs.base_url + "/batches/nope").status_code, 404)


def test_peak_rss_mb_of_the_lab_is_this_process_peak():
    from bench import peak_rss_mb
    assert 1 < peak_rss_mb() < 100_000
