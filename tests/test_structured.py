"Issue 21 item 2: the structured-output mode of an endpoint is asked of the server when the spec does not set it."
import json
import pytest
from scibench.llm import LLM, ModelSpec, Request, msgs, cache_key, detect_structured, resolve_structured
from scibench.core import read_jsonl

SCHEMA = {"type": "object", "properties": {"rationale": {"type": "string"}, "score": {"type": "integer", "minimum": 1,
          "maximum": 5}}, "required": ["rationale", "score"]}


def spec_for(fs, name="fake", **kw):
    return ModelSpec(name, fs.base_url, "fake-model", **{"timeout": 5.0, **kw})


@pytest.mark.parametrize("kind, mode, how", [
    ("llama", "llama", "the server answers llama.cpp's GET /props"),
    ("json_schema", "json_schema", "the OpenAI-compatible form: no llama.cpp GET /props"),
    (None, "json_schema", "the OpenAI-compatible form: no llama.cpp GET /props"),
])
def test_mode_from_the_server(fake_server, kind, mode, how):
    fs = fake_server(structured=kind)
    assert detect_structured(spec_for(fs)) == (mode, how)
    assert fs.calls == 0 and not fs.completions          # the detection sends no chat request
    assert detect_structured(spec_for(fs, name="other")) == (mode, how)   # once per endpoint and process


def test_explicit_mode_is_kept_and_never_asked(fake_server):
    fs = fake_server(structured="llama")
    assert detect_structured(spec_for(fs, structured="none")) == ("none", "set")
    assert fs.headers_seen == []
    assert resolve_structured({"a": spec_for(fs, structured="json_schema")})["a"].structured == "json_schema"


def test_unreachable_server_reads_text_and_is_asked_again():
    spec = ModelSpec("gone", "http://127.0.0.1:9/v1", "m", timeout=1.0)
    mode, how = detect_structured(spec)
    assert mode == "none" and how.startswith("not detected")


def test_llama_like_endpoint_gets_llama_and_its_answers_parse(fake_server):
    "An ad-hoc endpoint that behaves like llama.cpp, no mode given: its schema answers are JSON; text would not parse."
    fs = fake_server(structured="llama", reply=lambda body: "I like this design a lot.")
    llm = LLM(spec_for(fs), cache=False, progress=False)
    assert llm.spec.structured == "llama"
    r = llm.map([Request(msgs("judge this"), schema=SCHEMA)])[0]
    assert r["ok"] and r["structured"] and json.loads(r["text"]) == {"rationale": "fine", "score": 3}
    plain = LLM(spec_for(fs, structured="none"), cache=False, progress=False).map([Request(msgs("judge this"), schema=SCHEMA)])[0]
    assert plain["text"] == "I like this design a lot." and not plain["structured"]


def test_detected_mode_keeps_the_cache_key_of_the_explicit_one(fake_server):
    fs = fake_server(structured="llama")
    req = Request(msgs("q"), schema=SCHEMA)
    assert cache_key(LLM(spec_for(fs), cache=False, progress=False).spec, req) == cache_key(spec_for(fs, structured="llama"), req)
    assert cache_key(spec_for(fs, structured="auto"), req) == cache_key(spec_for(fs, structured="none"), req)   # undetected: text


def test_rejecting_server_fails_naming_the_fix(fake_server):
    "A server that refuses response_format: each such request fails with HTTP 400 naming the flag; with it, text."
    fs = fake_server(structured="reject")
    llm = LLM(spec_for(fs, max_retries=0), cache=False, progress=False)
    r = llm.map([Request(msgs("judge this"), schema=SCHEMA)])[0]
    assert llm.spec.structured == "json_schema" and not r["ok"] and "http 400" in r["error"]
    assert "--structured none" in r["error"] and "--<role>-structured" in r["error"]
    plain = LLM(spec_for(fs, structured="none"), cache=False, progress=False).map([Request(msgs("q"), schema=SCHEMA)])[0]
    assert plain["ok"] and not plain["structured"] and "score is" in plain["text"]


@pytest.mark.parametrize("kind, mode", [("llama", "llama"), ("json_schema", "json_schema")])
def test_ad_hoc_run_with_no_flag(kind, mode, fake_server, run_bench):
    "A whole AbGen run against an ad-hoc endpoint, no structured-output flag: every judge answer parses."
    reply = (lambda body: "A fine design.") if kind == "llama" else None   # llama: free text would not parse
    fs = fake_server(structured=kind, reply=reply)
    meta, d = run_bench("abgen", dict(model="m", judge="m", limit=2, max_tokens=16), endpoints={"m": {"base_url": fs.base_url}})
    assert meta["status"] == "complete", meta.get("status_reason")
    assert meta["roles_models"]["judge"]["structured"] == mode and meta["models"]["m"]["structured"] == mode
    recs = read_jsonl(d / "records.jsonl")
    assert len(recs) == 2 and not any(r.get("failure") for r in recs)
    assert all(isinstance(v, (int, float)) for r in recs for v in r["scores"].values()), recs[0]["scores"]


def test_an_undetected_mode_is_a_warning_naming_the_flag(capsys):
    "A server that does not answer is read as text, and the run says so with the flag to set."
    from scibench.llm import detect_structured
    spec = ModelSpec("nowhere", "http://127.0.0.1:9/v1", "nowhere", structured="auto", timeout=1)
    mode, how = detect_structured(spec, timeout=0.5)
    assert mode == "none" and "not detected" in how
    err = capsys.readouterr().err
    assert "warning: model 'nowhere'" in err and "--structured" in err
