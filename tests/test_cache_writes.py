"""Answers are stored as they arrive: every answer under its cache key, a rerun all from the cache, and two processes
writing one cache at once lose nothing (WAL, busy timeout)."""
import json, sqlite3, subprocess, sys
from pathlib import Path

from scibench.llm import LLM, Cache, ModelSpec, Request, cache_key, msgs

ROOT = Path(__file__).resolve().parent.parent


def test_every_answer_is_stored_and_a_rerun_is_all_cached(fake_server, tmp_path):
    fs = fake_server(latency_dist=("lognormal", 0.02, 0.5))
    spec = ModelSpec("fake", fs.base_url, "fake", max_concurrency=64, max_retries=0, timeout=10)
    reqs = [Request(msgs(f"q{i}")) for i in range(300)]
    res = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False).map(reqs)
    assert all(r["ok"] for r in res) and fs.calls == 300
    con = sqlite3.connect(tmp_path / "c.sqlite")
    stored = {k for (k,) in con.execute("SELECT key FROM cache")}
    assert {cache_key(spec, r) for r in reqs} <= stored
    again = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False).map(reqs)
    assert fs.calls == 300 and all(r["cached"] for r in again)


WRITER = """
import sys
from scibench.llm import Cache
c = Cache(sys.argv[1])
for i in range(400):
    c.put(f"{sys.argv[2]}-{i}", {"ok": True, "text": "x" * 200})
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "c.sqlite")
    Cache(path)
    ps = [subprocess.Popen([sys.executable, "-c", WRITER, path, tag], cwd=ROOT, stderr=subprocess.PIPE, text=True)
          for tag in ("a", "b")]
    errs = [p.communicate(timeout=120)[1] for p in ps]
    assert all(p.returncode == 0 for p in ps), errs
    c = Cache(path)
    assert c.count() == 800 and c.get("a-399") == {"ok": True, "text": "x" * 200}
    assert json.dumps(c.get("b-0"))
