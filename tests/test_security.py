"""Security and integrity under hostile files and faults (issue 20): files outside a repository never reach a prompt;
no key or URL credential is stored, not even one a server echoes into a 200 answer or a batch's scope; a corrupt cache
is set aside; batch creation survives a kill without a second batch; retries are counted by reason. The client's own
(`tests/test_client_security.py`): no key to a proxy, every field a server sends redacted, the timeout, the size limit."""
import base64, json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest
from scibench.core import read_jsonl
from scibench.batch import batch_scope
from scibench.llm import LLM, Cache, ModelSpec, Request, msgs

ROOT = Path(__file__).resolve().parent.parent
CANARY = "sk-canary-DO-NOT-WRITE-20a7c5e1"
PW = "pw-CANARY-20-9f3e1d"




def _clean(needles, *dirs) -> int:
    "Assert no file under `dirs` holds any of `needles`; returns how many files were read."
    n = 0
    for d in dirs:
        for f in Path(d).rglob("*"):
            if f.is_file():
                data = f.read_bytes(); n += 1
                for s in needles: assert s.encode() not in data, (s, f)
    return n


# -- item 1: a folder repository's files are read only inside it ---------------------------------------------------

def test_symlink_out_of_a_folder_repository_never_reaches_a_prompt(tmp_path):
    from scibench.benchmarks.rubrics.paperbench import RepoIndex, repo_files
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "train.py").write_text("def train():\n    return 'lr 3e-4'\n")
    (repo / "README.md").write_text("# A reproduction\nRun train.py.\n")
    (repo / "config.txt").symlink_to("/etc/passwd")
    (repo / "inside.py").symlink_to(repo / "src" / "train.py")        # a link that stays inside is read
    secret = tmp_path / "secret.txt"; secret.write_text("TOP-SECRET-OUTSIDE-THE-REPO\n")
    (repo / "src" / "notes.md").symlink_to(secret)
    (repo / "loop.txt").symlink_to(repo / "loop.txt")
    f = repo_files(repo)
    assert "config.txt" not in f["texts"] and "src/notes.md" not in f["texts"] and "loop.txt" not in f["texts"]
    assert f["skipped"]["config.txt"] == f["skipped"]["src/notes.md"] == "symlink pointing outside the repository (not read)"
    assert f["skipped"]["loop.txt"] == "symlink loop"
    assert "inside.py" in f["texts"] and "src/train.py" in f["texts"]
    ix = RepoIndex(repo)
    for needle in ("root:", "TOP-SECRET"):
        assert not any(needle in text for _, text in ix.chunks), needle
        for q in ("root passwd config", "secret notes"):
            assert not any(needle in c for _, cs in ix.retrieve(q, 10) for c in cs)
    assert {"path": "config.txt", "why": "symlink pointing outside the repository (not read)"} in ix.report["left_out"]


# -- item 2: secrets stored ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["key", "url"])
def test_a_key_echoed_in_a_200_answer_is_written_nowhere(how, fake_server, tmp_path, monkeypatch, run_bench, results, canary_registry):
    "A server quoting the Authorization header in every answer: records, report, notebook, meta and cache stay clean."
    fs = fake_server(echo_auth="")          # every answer
    url = fs.base_url if how == "key" else fs.base_url.replace("http://", f"http://alice:{PW}@")
    monkeypatch.setenv("SCIBENCH_MODELS", str(canary_registry(url)))
    monkeypatch.setenv("SCIBENCH_CANARY_KEY", CANARY)
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=2, max_tokens=16), notebook=True)
    assert meta["status"] == "complete", meta.get("reason")
    sent = {h.get("authorization") for h in fs.headers_seen if h.get("authorization")}
    needles = [CANARY, PW, "alice:", base64.b64encode(f"alice:{PW}".encode()).decode()]
    assert any(any(n in s for n in needles) for s in sent), sent   # a secret really was sent and echoed
    recs = read_jsonl(d / "records.jsonl")
    assert any("[redacted " in json.dumps(r) for r in recs), "the echo is in the answers, redacted"
    for f in ("records.jsonl", "report.html", "run.ipynb", "meta.json"):
        assert (d / f).exists(), f
    assert _clean(needles, d, tmp_path / "cache", results) >= 5


def test_batch_scope_never_holds_url_credentials(fake_server, tmp_path):
    fs = fake_server(batch_delay=0.05)
    url = fs.base_url.replace("http://", f"http://alice:{PW}@")
    spec = ModelSpec("fake", url, "fake", max_retries=1, timeout=10)
    c = Cache(tmp_path / "c.sqlite")
    res = LLM(spec, cache=c, progress=False, batch=True, batch_poll=0.05).map([Request(msgs(f"q{i}")) for i in range(3)])
    assert all(r["ok"] for r in res) and fs.batches_created == 1
    scopes = [r[0] for r in c.con.execute("SELECT scope FROM batches")]
    assert scopes and all(PW not in s and "alice" not in s for s in scopes), scopes
    # a scope an older version recorded with the credentials is rewritten when the cache opens
    c.con.execute("UPDATE batches SET scope=?", (f"{url}|fake",)); c.con.close()
    c2 = Cache(tmp_path / "c.sqlite")
    assert all(PW not in r[0] for r in c2.con.execute("SELECT scope FROM batches"))
    assert [r["scope"] for r in c2.batches(pending=False)] == [batch_scope(spec)]
    c2.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _clean([PW, "alice:"], tmp_path)


# -- item 4: a corrupt cache ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_corrupt_cache_is_moved_aside_and_the_run_goes_on(cli, damage, fake_server, tmp_path, monkeypatch, run_bench, capfd, canary_registry):
    cache = tmp_path / "cache" / "llm-cache.sqlite"
    c = Cache()
    for i in range(3000): c.put(f"k{i}", {"ok": True, "text": "x" * 300})
    c.con.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.con.close()
    if damage == "truncated":
        with open(cache, "r+b") as f: f.truncate(cache.stat().st_size // 2)
    else:
        data = bytearray(cache.read_bytes()); data[:100] = os.urandom(100); data[4096:8192] = os.urandom(4096)
        cache.write_bytes(bytes(data))
    for args in (["cache"], ["cache", "clear"], ["cache"]):   # `scibench cache` on a corrupt cache: no traceback
        r = cli(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "is corrupt" in r.stderr or list(cache.parent.glob("llm-cache.sqlite.corrupt-*")), r.stderr
    assert len(list(cache.parent.glob("llm-cache.sqlite.corrupt-*"))) == 1
    # a run on a corrupt cache: the file is set aside with one line naming it, the run completes
    for f in cache.parent.glob("llm-cache.sqlite*"): f.unlink()
    cache.write_bytes(b"SQLite format 3\x00" + os.urandom(20000))
    fs = fake_server()
    monkeypatch.setenv("SCIBENCH_MODELS", str(canary_registry(fs.base_url)))
    monkeypatch.setenv("SCIBENCH_CANARY_KEY", CANARY)
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=1, max_tokens=16))
    assert meta["status"] == "complete", meta.get("reason")
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if "is corrupt" in ln]
    assert len(lines) == 1 and str(cache) in lines[0] and "moved it to llm-cache.sqlite.corrupt-" in lines[0], err
    assert Cache().count() > 0


# -- item 6: double billing -----------------------------------------------------------------------------------------

def test_batch_create_whose_answer_is_lost_is_not_created_twice(fake_server, tmp_path):
    "The provider creates the batch but the answer never arrives: the client finds it by its input file, never resends."
    fs = fake_server(batch_delay=0.05, batch_create_drop=1)
    spec = ModelSpec("fake", fs.base_url, "fake", max_retries=3, timeout=10)
    res = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False, batch=True, batch_poll=0.05).map(
        [Request(msgs(f"q{i}")) for i in range(5)])
    assert [r["ok"] for r in res] == [True] * 5
    assert fs.batches_created == 1 and fs.batch_lists >= 1 and set(fs.batch_lines.values()) == {1}


CLIENT = """
import json, sys
from scibench.llm import LLM, ModelSpec, Request, msgs
llm = LLM(ModelSpec("fake", sys.argv[1], "fake", max_retries=2, timeout=30), progress=False, batch=True, batch_poll=0.05)
print(json.dumps(llm.map([Request(msgs(f"q{i}")) for i in range(int(sys.argv[2]))])))
"""


def test_kill_during_batch_create_then_the_rerun_creates_no_second_batch(fake_server):
    fs = fake_server(batch_delay=0.1, batch_create_hang=4.0)
    p = subprocess.Popen([sys.executable, "-c", CLIENT, fs.base_url, "6"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        t0 = time.time()
        while fs.batches_created == 0 and time.time() - t0 < 60 and p.poll() is None: time.sleep(0.02)
        assert fs.batches_created == 1, p.stderr.read().decode() if p.poll() is not None else "no batch was created"
    finally:
        p.send_signal(signal.SIGKILL); p.wait(10)   # killed while the provider's answer to the create is on its way
    pending = Cache().batches()
    assert len(pending) == 1 and pending[0]["status"] == "creating" and pending[0]["input_file_id"]
    fs.batch_create_hang = 0.0
    r = subprocess.run([sys.executable, "-c", CLIENT, fs.base_url, "6"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [x["ok"] for x in json.loads(r.stdout)] == [True] * 6
    assert fs.batches_created == 1 and set(fs.batch_lines.values()) == {1} and len(fs.batch_lines) == 6
    assert Cache().batches() == [] and Cache().count() == 6


# -- item 11: queue time and retries --------------------------------------------------------------------------------

def test_retries_are_counted_by_reason_into_meta(fake_server, tmp_path, monkeypatch, run_bench, canary_registry):
    fs = fake_server(fault_rate=1.0, faults=("429", "500", "reset", "html"), max_faults=1)
    llm = LLM(ModelSpec("fake", fs.base_url, "fake", max_concurrency=8, timeout=5.0, max_retries=2), cache=False,
              progress=False)
    res = llm.map([Request(msgs(f"q{i}")) for i in range(40)])
    assert all(r["ok"] for r in res)
    inj = fs.injected
    assert llm.usage.retries == {k: v for k, v in {"429": inj["429"], "5xx": inj["500"], "connection": inj["reset"],
                                                   "bad body": inj["html"]}.items() if v}, (llm.usage.retries, inj)
    fs2 = fake_server(fault_rate=1.0, faults=("429",), max_faults=1)
    monkeypatch.setenv("SCIBENCH_MODELS", str(canary_registry(fs2.base_url)))
    monkeypatch.setenv("SCIBENCH_CANARY_KEY", CANARY)
    meta, d = run_bench("abgen", dict(model="fake", judge="fake", limit=1, max_tokens=16))
    assert meta["status"] == "complete"
    m = json.loads((d / "meta.json").read_text())
    assert m["usage"]["total"]["retries"] == {"429": fs2.injected["429"]} and fs2.injected["429"] >= 5
