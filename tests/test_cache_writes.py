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


def test_a_full_cache_keeps_every_arrived_answer_says_so_once_naming_it_and_clears(fake_server, tmp_path, capsys):
    "The disk fills (SQLite's page limit): 50 answers still arrive and are returned; one warning names the file."
    fs = fake_server()
    spec = ModelSpec("fake", fs.base_url, "fake", max_concurrency=8, max_retries=0, timeout=10)
    c = Cache(tmp_path / "c.sqlite")
    c.put("first", {"ok": True, "text": "x"})
    c.con.execute(f"PRAGMA max_page_count = {c.con.execute('PRAGMA page_count').fetchone()[0]}")
    res = LLM(spec, cache=c, progress=False).map([Request(msgs(f"q{i} " + "y" * 4000)) for i in range(50)])
    assert all(r["ok"] for r in res) and fs.calls == 50 and "full" in c.full
    err = capsys.readouterr().err
    assert err.count("cannot store answers") == 1 and str(tmp_path / "c.sqlite") in err

    class Full:   # a disk so full that SQLite cannot even delete: `scibench cache clear` removes the files
        def __init__(self, con): self.con = con
        def execute(self, sql, *a):
            if sql.split()[0] in ("DELETE", "VACUUM", "INSERT"): raise sqlite3.OperationalError("database or disk is full")
            return self.con.execute(sql, *a)
        def close(self): self.con.close()
    c.con = Full(c.con)
    assert c.clear() >= 1 and c.count() == 0


def test_a_write_that_fills_the_disk_names_the_file(tmp_path):
    import errno, pytest
    from scibench.core import write_with

    def full(f):
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(OSError, match=r"No space left on device: '.*records\.jsonl'"):
        write_with(tmp_path / "records.jsonl", full)
    assert not list(tmp_path.iterdir()), "no temporary file left"
