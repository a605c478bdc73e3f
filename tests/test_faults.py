"""Faults real endpoints produce (issue 9): transient HTTP errors, hangs, resets and HTTP 200 bodies that are not chat
completions are retried and lose nothing; what still fails is a failure record that names the problem; no key or URL
credential is ever written; runaway answers are capped."""
import time
import pytest
from scibench.core import read_json, read_jsonl
from bench.fakeserver import FakeServer
from scibench.llm import LLM, Cache, ModelSpec, Request, msgs

CANARY = "sk-canary-DO-NOT-WRITE-7d41e9b2"
BAD_BODIES = ("html", "array", "nochoices", "badjson")


def spec_for(fs, **kw):
    return ModelSpec("fake", fs.base_url, "fake-model", **{"max_retries": 6, "timeout": 1.0, **kw})


def test_done_when_30pct_mixed_faults_every_request_completes_once(fake_server):
    "Done-when of issue 9: 300 requests, 30% of them faulted (every kind, up to 2 faults each): 100% complete, none twice."
    fs = fake_server(fault_rate=0.3, faults=FakeServer.FAULTS, max_faults=2, hang=3)
    n = 300
    t0 = time.time()
    res = LLM(spec_for(fs, max_concurrency=64), cache=False, progress=False).map([Request(msgs(f"question {i}")) for i in range(n)])
    took = time.time() - t0
    assert all(r["ok"] for r in res), [r["error"] for r in res if not r["ok"]][:5]
    assert len(fs.completions) == n and set(fs.completions.values()) == {1}, "every request completed exactly once"
    assert set(fs.injected) == set(FakeServer.FAULTS), fs.injected   # every kind was injected
    faulted = sum(1 for k, a in fs.attempts.items() if a > 1)
    assert 0.2 * n <= faulted <= 0.4 * n, faulted
    assert sum(fs.injected.values()) == fs.calls - n   # every extra attempt was an injected fault
    print(f"\n{sum(fs.injected.values())} faults injected ({dict(fs.injected)}) on {faulted} of {n} requests; "
          f"{sum(r['ok'] for r in res)} completed; {sum(1 for v in fs.completions.values() if v > 1)} completed twice; {took:.1f} s")


@pytest.mark.parametrize("kind,needle", [("html", "an HTML page"), ("array", "a JSON array"),
                                         ("nochoices", "a JSON object without 'choices'"), ("badjson", "truncated or invalid JSON")])
def test_bad_200_body_is_retried_with_backoff_then_a_failure_record(fake_server, kind, needle):
    fs = fake_server(fault_rate=1.0, faults=(kind,), max_faults=10)
    t0 = time.time()
    llm = LLM(spec_for(fs, max_retries=2), cache=False, progress=False)
    r = llm.chat("hello")
    took = time.time() - t0
    assert not r["ok"] and r["text"] is None and llm.usage.failures == 1
    assert fs.calls == 3, "1 attempt + max_retries retries, no more"
    assert took >= 0.5 * 0.75 + 1.0 * 0.75, "the client's exponential backoff (0.5 s, 1 s, less ≤25% jitter) is applied"
    assert r["error"].startswith("bad response (after retries): HTTP 200 body is ") and needle in r["error"], r["error"]
    assert len(r["error"]) < 500
    body_start = {"html": "<!DOCTYPE html>", "array": "'[]'", "nochoices": '{"id": "x"}', "badjson": '{"id": "chatcmpl-fake"'}[kind]
    assert body_start in r["error"], "the reason quotes the first bytes of the body"


def test_bad_body_then_good_answer_succeeds_and_max_retries_0_is_one_attempt(fake_server):
    fs = fake_server(fault_rate=1.0, faults=BAD_BODIES, max_faults=1)
    res = LLM(spec_for(fs), cache=False, progress=False).map([Request(msgs(f"q{i}")) for i in range(8)])
    assert all(r["ok"] for r in res) and fs.calls == 16 and set(fs.completions.values()) == {1}
    fs2 = fake_server(fault_rate=1.0, faults=("html",), max_faults=1)
    r = LLM(spec_for(fs2, max_retries=0), cache=False, progress=False).chat("x")
    assert not r["ok"] and fs2.calls == 1 and "HTML page" in r["error"]


def test_odd_but_parseable_completion_shapes_never_crash(fake_server):
    "Content as a list of parts, content of the wrong type, usage with odd values: an answer or a failure record, never an exception."
    replies = iter([])
    fs = fake_server(reply=lambda body: next(replies))   # a dict from `reply` is the whole HTTP 200 body: odd shapes
    base = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
    shapes = [dict(base, choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]),
              dict(base, choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": 42}}]),
              dict(base, choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}], usage={"prompt_tokens": "3", "completion_tokens": None}),
              dict(base, choices=[])]
    replies = iter(shapes)
    llm = LLM(spec_for(fs, max_concurrency=1), cache=False, progress=False)
    out = [llm.chat(f"s{i}") for i in range(len(shapes))]
    assert out[0]["ok"] and out[0]["text"] == "ab"
    assert not out[1]["ok"] and out[1]["error"].startswith("bad response: TypeError")
    assert out[2]["ok"] and out[2]["usage"] == {"prompt_tokens": 0, "completion_tokens": 0}
    assert not out[3]["ok"] and out[3]["error"] == "empty response"


# -- secrets ------------------------------------------------------------------------------------------------------------



def _files_without(needles, *dirs):
    "Assert no file under `dirs` contains any of `needles`; returns how many files were read."
    n = 0
    for d in dirs:
        for f in d.rglob("*"):
            if f.is_file():
                data = f.read_bytes(); n += 1
                for s in needles: assert s.encode() not in data, (s, f)
    return n


@pytest.mark.parametrize("how", ["registry", "ad-hoc"])
def test_key_echoed_by_server_is_written_nowhere(how, fake_server, tmp_path, monkeypatch, run_bench, results, canary_registry):
    "A server that echoes the Authorization header into its 401 body: the key reaches no file (records, meta, notebook, cache)."
    fs = fake_server(unauthorized="Multilingual question answering models answer confidently")   # 2 of the 8 AbGen examples (their background)
    monkeypatch.setenv("SCIBENCH_MODELS", str(canary_registry(fs.base_url)))
    monkeypatch.setenv("SCIBENCH_CANARY_KEY", CANARY)
    if how == "registry":
        meta, d = run_bench("abgen", dict(model="fake", judge="fake", max_tokens=16), notebook=True)
    else:   # an ad-hoc endpoint whose key variable the registry does not name
        monkeypatch.setenv("SCIBENCH_ADHOC_KEY", CANARY + "-adhoc")
        ep = dict(base_url=fs.base_url, api_key_env="SCIBENCH_ADHOC_KEY", max_retries=0)
        meta, d = run_bench("abgen", dict(model="adhoc", judge="adhoc", max_tokens=16), endpoints={"adhoc": ep}, notebook=True)
    secret = CANARY if how == "registry" else CANARY + "-adhoc"
    assert any(h.get("authorization") == f"Bearer {secret}" for h in fs.headers_seen), "the key really was sent"
    recs = read_jsonl(d / "records.jsonl")
    echoed = [r for r in recs if r.get("failure")]
    assert len(echoed) == 2 and all("http 401" in r["failure"] and "[redacted $" in r["failure"] for r in echoed), echoed
    assert (d / "run.ipynb").exists()
    assert _files_without([CANARY], d, tmp_path / "cache", results) > 3


def test_url_credentials_never_reach_meta(fake_server, tmp_path, monkeypatch, run_bench, results, canary_registry):
    fs = fake_server()
    url = fs.base_url.replace("http://", "http://alice:pw-CANARY-5e2f@")
    monkeypatch.setenv("SCIBENCH_MODELS", str(canary_registry(url)))
    monkeypatch.setenv("SCIBENCH_CANARY_KEY", CANARY)
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=2, max_tokens=16))
    assert meta["status"] == "complete"
    m = read_json(d / "meta.json")
    assert m["models"]["fake"]["base_url"] == fs.base_url
    _files_without(["pw-CANARY-5e2f", "alice:", CANARY], d, tmp_path / "cache", results)


# -- response size cap ----------------------------------------------------------------------------------------------------

def test_one_megabyte_answer_is_cut_flagged_and_counted(fake_server, tmp_path):
    fs = fake_server(reply=lambda body: "x" * 1_000_000)
    c = Cache(tmp_path / "c.sqlite")
    llm = LLM(spec_for(fs, timeout=10.0), cache=c, progress=False)
    r = llm.chat("write forever")
    assert r["ok"] and len(r["text"]) == 200_000 and r["truncated"] is True and r["response_chars"] == 1_000_000
    assert r["finish_reason"] == "stop" and llm.usage.truncated == 1
    assert c.size_bytes() < 600_000, "never stored whole"
    again = LLM(spec_for(fs, timeout=10.0), cache=c, progress=False)
    r2 = again.chat("write forever")
    assert r2["cached"] and r2["truncated"] and len(r2["text"]) == 200_000 and again.usage.truncated == 1 and fs.calls == 1
    small = LLM(spec_for(fs, timeout=10.0, max_response_chars=1000), cache=False, progress=False).chat("write forever")
    assert len(small["text"]) == 1000 and small["truncated"]
    short = LLM(spec_for(fake_server(), timeout=10.0), cache=False, progress=False).chat("hi")
    assert short["ok"] and "truncated" not in short


def test_cap_from_the_registry_reaches_the_run(fake_server, tmp_path, monkeypatch, run_bench, canary_registry):
    fs = fake_server(reply=lambda body: "y" * 5000)
    monkeypatch.setenv("SCIBENCH_MODELS", str(canary_registry(fs.base_url, max_response_chars=300)))
    monkeypatch.setenv("SCIBENCH_CANARY_KEY", CANARY)
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=1, max_tokens=16))
    assert meta["models"]["fake"]["max_response_chars"] == 300
    assert meta["usage"]["model"]["truncated"] >= 1
    rec = read_jsonl(d / "records.jsonl")[0]
    assert len(rec["design"]) == 300
