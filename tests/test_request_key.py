"""The cache key's bytes are fixed: keys computed before the client moved to aiohttp (the committed runs' reruns make
no call), and what the server reads is the body whose answer is stored under `cache_key`."""
import json

from scibench.llm import LLM, Cache, ModelSpec, Request, cache_key, msgs

SPECS = [ModelSpec("m", "http://127.0.0.1:9/v1/", "served-é", structured=s) for s in ("none", "json_schema", "llama")]
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
REQS = [Request(msgs("hello")), Request(msgs('Ünïcode 漢 "q"\n', "sys"), max_tokens=64, temperature=0.7, sample=2),
        Request(msgs("x" * 9000 + "tail", "system"), stop=["\n\n"]), Request(msgs("grade", "judge"), schema=SCHEMA, sample=1)]
# computed with the client of commit ae76917 (its own HTTP/1.1 wire, `request_key` and `cache_key` agreeing)
GOLDEN = {
    (0, 0): "fa015b18ab526b640d70faddb2a729caf081dde9483e4f8888fd550e7776577f",
    (0, 1): "148f3f0c2b86facef90bdd97e2d78d0b6ad9f07f23516688b217814aaed8d01d",
    (0, 2): "aa230ff388aba7b493bb27c647fd44690ceb79e6e021b4efa78c3b41e2ef5a8d",
    (0, 3): "2715c8ae6e1ea0794ad92be9085ca76ad006579f6268b6fe6a011d5f5a223f6b",
    (1, 0): "fa015b18ab526b640d70faddb2a729caf081dde9483e4f8888fd550e7776577f",
    (1, 3): "fd9206133aa77e49e18ee0247abbe7f5dfa5ef1d594bf83331b8202d31325e68",
    (2, 1): "148f3f0c2b86facef90bdd97e2d78d0b6ad9f07f23516688b217814aaed8d01d",
    (2, 3): "41cef49e03572fa59b296c5f44a5097455b6349a25d54e75850156736e8ac6a1",
}


def test_cache_keys_are_the_ones_computed_before():
    for (i, j), key in GOLDEN.items():
        assert cache_key(SPECS[i], REQS[j]) == key, (i, j)


def test_a_sent_body_is_the_stored_one(fake_server, tmp_path):
    "Through the client: the server reads each request body as sent, and the answers are stored under `cache_key`."
    seen = []
    fs = fake_server(reply=lambda body: seen.append(body) or "ok")
    spec = ModelSpec("fake", fs.base_url, "fake", max_retries=0, timeout=10)
    llm = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False)
    reqs = [Request(msgs(f"é {i} \"quoted\"\n" + "long 😀 text\t" * (2000 * (i % 2)), "sys")) for i in range(6)]
    assert all(r["ok"] for r in llm.map(reqs))
    c = Cache(tmp_path / "c.sqlite")
    assert all(c.get(cache_key(spec, r)) is not None for r in reqs)
    key = lambda b: json.dumps(b, sort_keys=True)
    assert sorted(map(key, seen)) == sorted(key(llm.body(r)) for r in reqs)
    again = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False)
    assert all(r["cached"] for r in again.map(reqs)) and again.usage.calls == 0 and len(seen) == 6
