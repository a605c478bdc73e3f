"Model layer against a fake OpenAI-compatible server: faults, failures, cache, concurrency."
import pytest
import asyncio
from scibench.llm import LLM, Cache, ModelSpec, Request, msgs, cache_key, get_model, load_registry, pipeline
from scibench.judge import judge_many


def spec_for(fs, **kw):
    return ModelSpec("fake", fs.base_url, "fake-model", **{"max_retries": 6, "timeout": 2.0, **kw})


def test_transient_faults_every_request_completes_once(fake_server):
    fs = fake_server(fault_rate=0.3, faults=("429", "500", "timeout", "reset"), hang=5)
    res = LLM(spec_for(fs), progress=False).map([Request(msgs(f"question {i}")) for i in range(60)])
    assert all(r["ok"] for r in res), [r["error"] for r in res if not r["ok"]]
    assert len(fs.completions) == 60 and set(fs.completions.values()) == {1}
    faulted = sum(1 for k, n in fs.attempts.items() if n > 1)
    assert faulted >= 8, "the fault plan should hit about 30% of requests"


def test_permanent_400_is_a_failure_record_not_a_score(fake_server):
    fs = fake_server(permanent="POISON")
    llm = LLM(spec_for(fs), progress=False)
    out = judge_many(llm, ["rate this: fine", "rate this: POISON"])
    assert out[0]["failure"] is None and out[0]["value"] in range(1, 6)
    assert out[1]["value"] is None and out[1]["failure"].startswith("request failed: http 400")
    assert llm.usage.failures == 1 and llm.usage.requests == 2
    assert fs.attempts.most_common(1)[0][1] == 1, "a 400 is not retried"


def test_malformed_json_response_is_retried_or_recorded(fake_server):
    fs = fake_server(fault_rate=1.0, faults=("badjson",), max_faults=1)
    res = LLM(spec_for(fs, max_retries=0), progress=False).map([Request(msgs("x"))])
    assert not res[0]["ok"] and res[0]["error"].startswith("bad response (after retries): HTTP 200 body is truncated or invalid JSON")
    assert fs.calls == 1   # max_retries=0: one attempt (tests/test_faults.py covers retries and every bad-body kind)


def test_second_identical_run_makes_zero_calls(fake_server, tmp_path):
    fs = fake_server()
    reqs = [Request(msgs(f"q{i}"), temperature=1.0, sample=s) for i in range(10) for s in range(2)]
    first = LLM(spec_for(fs), cache=Cache(tmp_path / "c.sqlite"), progress=False).map(reqs)
    assert fs.calls == 20
    llm = LLM(spec_for(fs), cache=Cache(tmp_path / "c.sqlite"), progress=False)
    second = llm.map(reqs)
    assert fs.calls == 20 and llm.usage.calls == 0 and llm.usage.cached == 20
    assert [r["text"] for r in first] == [r["text"] for r in second]


def test_cache_key_covers_model_messages_params_sample(fake_server):
    s = ModelSpec("a", "http://x/v1", "m1")
    base = Request(msgs("hi"))
    keys = {cache_key(s, base), cache_key(ModelSpec("a", "http://x/v1", "m2"), base),
            cache_key(s, Request(msgs("hi!"))), cache_key(s, Request(msgs("hi"), temperature=1.0)),
            cache_key(s, Request(msgs("hi"), sample=1)), cache_key(s, Request(msgs("hi"), max_tokens=7))}
    assert len(keys) == 6
    # the endpoint is part of the key: the same name and served id on another server is another model
    assert cache_key(ModelSpec("a", "http://y/v1", "m1"), base) != cache_key(s, base)
    # the registry name is not: two names for one endpoint share answers
    assert cache_key(ModelSpec("b", "http://x/v1/", "m1"), base) == cache_key(s, base)


def test_failures_are_not_cached(fake_server, tmp_path):
    fs = fake_server(permanent="BAD")
    c = Cache(tmp_path / "c.sqlite")
    LLM(spec_for(fs), cache=c, progress=False).map([Request(msgs("BAD")), Request(msgs("good"))])
    assert c.count() == 1


def test_concurrency_is_bounded(fake_server, monkeypatch):
    fs = fake_server(latency=0.05)
    res = LLM(spec_for(fs, max_concurrency=4), progress=False).map([Request(msgs(f"c{i}")) for i in range(24)])
    assert all(r["ok"] for r in res) and fs.peak_inflight == 4
    monkeypatch.setenv("MAX_CONCURRENCY", "3")
    fs2 = fake_server(latency=0.05)
    LLM(spec_for(fs2, max_concurrency=16), progress=False).map([Request(msgs(f"d{i}")) for i in range(12)])
    assert fs2.peak_inflight == 3


def test_max_concurrency_one_is_one_in_flight(fake_server, monkeypatch):
    "`LLM(spec, max_concurrency=1)` (and a model with its judge on one endpoint, in a pipeline) keeps one request in flight."
    monkeypatch.delenv("MAX_CONCURRENCY", raising=False)
    fs = fake_server(latency=0.05)
    res = LLM(spec_for(fs, max_concurrency=8), cache=False, max_concurrency=1, progress=False).map([Request(msgs(f"o{i}")) for i in range(6)])
    assert all(r["ok"] for r in res) and fs.peak_inflight == 1
    fs2 = fake_server(latency=0.05)
    model, judge = (LLM(spec_for(fs2, max_concurrency=1), cache=False, progress=False) for _ in range(2))
    async def one(i):
        a = await model.acall(Request(msgs(f"g{i}")))
        return await asyncio.gather(*(judge.acall(Request(msgs(f"j{i}-{c}:{a['text']}"))) for c in range(3)))
    out = pipeline(range(5), one, [model, judge])
    assert all(r["ok"] for rs in out for r in rs) and fs2.peak_inflight == 1


def test_endpoint_concurrency_above_32_is_used(fake_server, monkeypatch):
    "An endpoint's max_concurrency (registry or --concurrency) is the limit: it used to be cut to 32 silently."
    monkeypatch.delenv("MAX_CONCURRENCY", raising=False)
    fs = fake_server(latency=0.3)
    res = LLM(spec_for(fs, max_concurrency=64), cache=False, progress=False).map([Request(msgs(f"e{i}")) for i in range(64)])
    assert all(r["ok"] for r in res) and fs.peak_inflight == 64


def test_registry_and_ad_hoc_models(tmp_path, monkeypatch):
    reg = load_registry()
    assert "local" in reg and reg["local"].embedded and reg["local"].max_concurrency == 1
    m = get_model("my-vllm", base_url="http://10.0.0.1:8000/v1", model="Qwen/Qwen3-8B")
    assert (m.base_url, m.model, m.api_key_env) == ("http://10.0.0.1:8000/v1", "Qwen/Qwen3-8B", None)
    with pytest.raises(KeyError, match="BASE_URL"):
        get_model("nope")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        get_model("gpt-4o-mini").api_key()


# -- registry checks (issue 9): every bad value names models.toml, the model and the field -----------------------------------

GOOD = 'base_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'


@pytest.mark.parametrize("line,field,got", [
    ('max_concurrency = "8"', "max_concurrency", "got '8' (str)"),
    ("max_concurrency = 0", "max_concurrency", "got 0 (int)"),
    ('timeout = "x"', "timeout", "got 'x' (str)"),
    ("timeout = 0", "timeout", "got 0 (int)"),
    ("price_in = true", "price_in", "got True (bool)"),
    ("price_out = -1.0", "price_out", "got -1.0 (float)"),
    ('embedded = "yes"', "embedded", "got 'yes' (str)"),
    ("api_key_env = 3", "api_key_env", "got 3 (int)"),
    ('structured = "json"', "structured", "got 'json' (str)"),
    ("max_retries = -1", "max_retries", "got -1 (int)"),
    ("context = 1.5", "context", "got 1.5 (float)"),
    ("max_response_chars = 0", "max_response_chars", "got 0 (int)"),
])
def test_registry_bad_type_names_file_model_and_field(tmp_path, line, field, got):
    p = tmp_path / "models.toml"
    p.write_text(f"[models.ok]\n{GOOD}\n[models.m]\n{GOOD}{line}\n")
    with pytest.raises(ValueError) as e:
        load_registry(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: model 'm': field '{field}' must be ") and msg.endswith(got), msg


@pytest.mark.parametrize("text,needle", [
    ('[models.m]\nmodel = "m"\n', "model 'm': field 'base_url' is missing"),
    ('[models.m]\nbase_url = "http://h/v1"\n', "model 'm': field 'model' is missing"),
    ('[models.m]\nbase_url = "ftp://h/v1"\nmodel = "m"\n', "model 'm': field 'base_url' must be an http(s) URL, got 'ftp://h/v1'"),
    ('[models.m]\nbase_url = 5\nmodel = "m"\n', "model 'm': field 'base_url' must be an http(s) URL, got 5 (int)"),
    ('[models.m]\nbase_url = "http://h/v1"\nmodel = 5\n', "model 'm': field 'model' must be a non-empty string"),
    ('[models.m]\nbase_url = "http://h/v1"\nmodel = "m"\nmax_concurency = 4\n', "model 'm': unknown field(s) ['max_concurency']"),
    ('[models]\nm = 3\n', "model 'm' must be a table"),
    ('models = 3\n', "'models' must be a table"),
    ('[models.m]\nbase_url = "http://h/v1"\nmodel = "m"\ntimeout = \n', "invalid TOML: Invalid value (at line 4, column 11)"),
    ('[models.m]\nbase_url = "http://h/v1\nmodel = "m"\n', "(at line 2"),
])
def test_registry_errors_name_the_file(tmp_path, text, needle):
    p = tmp_path / "models.toml"
    p.write_text(text)
    with pytest.raises(ValueError) as e:
        load_registry(p)
    assert str(e.value).startswith(f"{p}: ") and needle in str(e.value), str(e.value)


def test_registry_non_utf8_and_a_pasted_key_are_named_but_never_echoed(tmp_path):
    p = tmp_path / "models.toml"
    p.write_bytes(b'[models.m]\nbase_url = "http://h/v1"\n# caf\xe9\nmodel = "m"\n')
    with pytest.raises(ValueError, match=r"models.toml:3: not UTF-8"):
        load_registry(p)
    key = "sk-proj-abcdef0123456789"
    p.write_text(f'[models.m]\nbase_url = "http://h/v1"\nmodel = "m"\napi_key_env = "{key}"\n')
    with pytest.raises(ValueError) as e:
        load_registry(p)
    assert "field 'api_key_env' must be the name of an environment variable" in str(e.value) and key not in str(e.value)


def test_every_registry_field_is_checked():
    from scibench.llm import _FIELD_CHECKS
    assert set(_FIELD_CHECKS) == set(ModelSpec.__dataclass_fields__)


def test_bad_registry_is_a_one_line_config_error_from_the_cli(tmp_path):
    import subprocess, sys, os
    from pathlib import Path
    p = tmp_path / "models.toml"
    p.write_text('[models.m]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nmax_concurrency = "8"\n')
    r = subprocess.run([sys.executable, "-m", "scibench.cli", "run", "abgen", "--model", "m", "--dry-run"], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parent.parent, env={**os.environ, "SCIBENCH_MODELS": str(p)}, timeout=120)
    assert r.returncode == 2, r.stderr
    assert f"{p}: model 'm': field 'max_concurrency' must be an integer >= 1, got '8' (str)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_redact_follows_the_environment(monkeypatch):
    "The memo of key values (`_secret_values`) sees a key set, changed or removed between two answers."
    from scibench import llm as L
    from scibench import redaction
    monkeypatch.setattr(redaction, "_KEY_VARS", redaction._KEY_VARS | {"SCIBENCH_TEST_KEY"})
    monkeypatch.delenv("SCIBENCH_TEST_KEY", raising=False)
    assert L.redact("x sk-first-0123456789 y", patterns=False) == "x sk-first-0123456789 y"
    monkeypatch.setenv("SCIBENCH_TEST_KEY", "sk-first-0123456789")
    assert L.redact("x sk-first-0123456789 y", patterns=False) == "x [redacted $SCIBENCH_TEST_KEY] y"
    monkeypatch.setenv("SCIBENCH_TEST_KEY", "sk-second-0123456789")
    assert L.redact("sk-first-0123456789 sk-second-0123456789", patterns=False) == (
        "sk-first-0123456789 [redacted $SCIBENCH_TEST_KEY]")
    monkeypatch.delenv("SCIBENCH_TEST_KEY")
    assert L.redact("sk-second-0123456789", patterns=False) == "sk-second-0123456789"
