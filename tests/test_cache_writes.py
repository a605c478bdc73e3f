"""The lease protocol's writes grouped by turn of the event loop (issue 22, item 2): fewer transactions than requests,
every answer stored under its cache key with its lease ended, and a lease asked for by a cancelled request not kept."""
import asyncio, sqlite3

from scibench.llm import LLM, Cache, ModelSpec, Request, cache_key, lease_owner, msgs
from scibench import llm as L


def test_grouped_writes_store_every_answer_and_end_every_lease(fake_server, tmp_path, monkeypatch):
    fs = fake_server(latency_dist=("lognormal", 0.02, 0.5))
    spec = ModelSpec("fake", fs.base_url, "fake", max_concurrency=64, max_retries=0, timeout=10)
    calls = []
    orig = Cache.write_many
    monkeypatch.setattr(Cache, "write_many", lambda self, puts, keys, *a: calls.append((len(puts), len(keys)))
                        or orig(self, puts, keys, *a))
    reqs = [Request(msgs(f"q{i}")) for i in range(300)]
    res = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False).map(reqs)
    assert all(r["ok"] for r in res) and fs.calls == 300
    assert sum(p for p, _ in calls) == 300 and sum(k for _, k in calls) == 300  # each answer stored, each lease taken
    assert len(calls) < 2 * 300, "grouped: fewer transactions than two a request"
    con = sqlite3.connect(tmp_path / "c.sqlite")
    assert con.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
    stored = {k for (k,) in con.execute("SELECT key FROM cache")}
    assert {cache_key(spec, r) for r in reqs} <= stored
    again = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False).map(reqs)
    assert fs.calls == 300 and all(r["cached"] for r in again)


def test_write_many_is_lease_and_put(tmp_path):
    "One transaction gives what `lease` and `put` give one at a time: taken, held by a live owner, or cached."
    c = Cache(tmp_path / "c.sqlite")
    me = lease_owner()
    c.put("done", {"ok": True, "text": "x"})
    import os, socket
    other = f"{socket.gethostname()}:{os.getppid()}:x"  # a live process
    assert c.lease("held", other, 60) is None
    got = c.write_many([("mine", {"ok": True, "text": "y"})], ["done", "held", "new", "new"], me, 60)
    assert got == {"done": "cached", "held": other, "new": None}
    assert c.get("mine") == {"ok": True, "text": "y"}
    assert c.leased(["new", "held", "mine"]) == {"new", "held"}


def test_a_lease_taken_for_a_cancelled_request_is_given_back(tmp_path):
    c = Cache(tmp_path / "c.sqlite")
    llm = LLM(ModelSpec("m", "http://127.0.0.1:9/v1", "m", structured="none"), cache=c, progress=False)

    async def go():
        async with llm.live(quiet=True) as lv:
            t = asyncio.ensure_future(L._leased(lv, "k", lease_owner()))
            await asyncio.sleep(0)  # queued for this turn's transaction
            lv.writes.flush()  # taken...
            t.cancel()  # ...for a request cancelled before it could go on
            try:
                await t
            except asyncio.CancelledError:
                pass
    asyncio.run(go())
    assert c.leased(["k"]) == set()
