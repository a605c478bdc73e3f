"""A request's messages are JSON-encoded once for its cache key and its body (issue 22, item 2): the key is
`cache_key`'s byte for byte (a committed run's rerun makes no call), the body is the one `_ENCODE` wrote, and the
plan's stub tells requests apart exactly as the cache key does."""
import itertools, json, random

from scibench.llm import (
    _ENCODE, _ENCODED, LLM, ModelSpec, Request, _body_bytes, cache_key, dedup_key, msgs, request_key,
)
from scibench.run import CountingLLM

ALPHABET = ["a", "Z", " ", "\n", "\t", '"', "\\", "/", "é", "漢", "😀", "\x00", "\x1f", "\u2028", "{", "}", "]"]


def _text(rng, n):
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def _requests(rng, k=400):
    schema = {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}, "required": ["a"]}
    for i in range(k):
        m = msgs(_text(rng, rng.randint(0, 60)), _text(rng, rng.randint(1, 20)) if i % 3 else None)
        if i % 7 == 0:
            m = [{"content": x["content"], "role": x["role"]} for x in m]  # keys in the other order
        if i % 11 == 0:
            m[-1]["name"] = _text(rng, 3)
        yield Request(m, max_tokens=rng.choice([1, 512]), temperature=rng.choice([0, 0.0, 0.7, 1]), sample=i % 3,
                      schema=schema if i % 5 == 0 else None, stop=["\n\n", "é"] if i % 4 == 0 else None)


SPECS = [ModelSpec("m", "http://127.0.0.1:9/v1/", "served-é", structured=s) for s in ("none", "json_schema", "llama")]


def test_request_key_is_cache_key_and_body_is_encode(monkeypatch):
    import scibench.llm as L

    monkeypatch.setattr(L, "ENCODE_ONCE_CHARS", 0)  # every request through the encode-once path
    rng = random.Random(0)
    n = 0
    for spec, req in itertools.product(SPECS, list(_requests(rng))):
        key, enc = request_key(spec, req)
        assert key == cache_key(spec, req)
        assert enc is not None and enc.of(req)
        kw = LLM(spec, cache=False, progress=False)._body(req)
        assert _body_bytes(kw, enc) == _ENCODE(kw).encode()
        n += 1
    assert n == 3 * 400


def test_unplain_messages_fall_back_and_a_changed_message_is_not_reused():
    import scibench.llm as L

    spec = SPECS[1]
    short, long = Request(msgs("short")), Request(msgs("x" * L.ENCODE_ONCE_CHARS))
    assert request_key(spec, short) == (cache_key(spec, short), None)  # short: encoded twice, cheaper
    key, enc = request_key(spec, long)
    assert key == cache_key(spec, long) and enc is not None and enc.of(long)
    req = Request([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert request_key(spec, req) == (cache_key(spec, req), None)
    assert dedup_key(spec, req) == cache_key(spec, req)
    req = Request(msgs("hello " * 2000))
    _, enc = request_key(spec, req)
    req.messages[0]["content"] = "hello again"  # changed after its key: the kept encoding is not its body any more
    assert not enc.of(req)


def test_dedup_key_tells_requests_apart_as_the_cache_key_does():
    rng = random.Random(1)
    reqs = list(_requests(rng, 150))
    reqs += [Request([dict(x) for x in r.messages], r.max_tokens, r.temperature, r.sample, r.schema, r.stop)
             for r in reqs[::3]]  # equal copies
    reqs += [Request(msgs("same"), temperature=0), Request(msgs("same"), temperature=0.0),
             Request(msgs("same"), sample=0), Request(msgs("same"), sample=1)]
    for spec in SPECS:
        for a, b in itertools.combinations(reqs, 2):
            assert (dedup_key(spec, a) == dedup_key(spec, b)) == (cache_key(spec, a) == cache_key(spec, b))


def test_the_stub_and_the_client_key_requests_by_what_they_store():
    spec = SPECS[0]
    req = Request(msgs("q"))
    stub = CountingLLM(spec)
    assert stub._key(req) == (dedup_key(spec, req), None)  # nothing cached: no JSON, no hash
    assert LLM(spec, cache=False, progress=False)._key(req)[0] == dedup_key(spec, req)
    assert _ENCODED.get() is None


def test_a_sent_body_is_the_encoded_one(fake_server, tmp_path):
    "Through the client: the server reads each request body as sent, and the answers are stored under `cache_key`."
    from scibench.llm import Cache

    seen = []
    fs = fake_server(reply=lambda body: seen.append(body) or "ok")
    spec = ModelSpec("fake", fs.base_url, "fake", max_retries=0, timeout=10)
    llm = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False)
    reqs = [Request(msgs(f"é {i} \"quoted\"\n" + "long 😀 text\t" * (2000 * (i % 2)), "sys")) for i in range(6)]
    assert all(r["ok"] for r in llm.map(reqs))
    c = Cache(tmp_path / "c.sqlite")
    assert all(c.get(cache_key(spec, r)) is not None for r in reqs)
    key = lambda b: json.dumps(b, sort_keys=True)
    assert sorted(map(key, seen)) == sorted(key(llm._body(r)) for r in reqs)


def test_long_texts_sharing_a_beginning_encode_as_json_does():
    "A long text's JSON from a beginning learned from earlier texts (`_enc_text`) is `encode_basestring`'s, and keys."
    from scibench import llm

    rng = random.Random(7)
    heads = [_text(rng, rng.randint(4000, 9000)) + "\n" for _ in range(3)]
    for i in range(300):
        v = rng.choice(heads)[: rng.choice([9000, 9000, rng.randint(0, 9000)])] + _text(rng, rng.randint(0, 3000))
        assert llm._enc_text(v) == json.encoder.encode_basestring(v), i
        req = Request(msgs(v, "sys" if i % 2 else None), max_tokens=5)
        assert request_key(SPECS[i % 3], req)[0] == cache_key(SPECS[i % 3], req), i
    assert llm._SHARED[0], "no beginning was learned"
    assert all(llm._common_len(a, b) == len(__import__("os").path.commonprefix([a, b])) for a in heads for b in heads)
