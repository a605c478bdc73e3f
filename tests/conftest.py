import os, shutil
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    "Every test gets its own response cache; results/ and the user's cache are never touched."
    monkeypatch.setenv("SCIBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SCIBENCH_ROOT", str(ROOT))
    yield


@pytest.fixture
def fake_server():
    "A fake OpenAI-compatible server on 127.0.0.1 (fault injection, counting)."
    from scibench.fakeserver import FakeServer
    servers = []
    def make(**kw):
        s = FakeServer(**kw).start(); servers.append(s); return s
    yield make
    for s in servers: s.stop()


@pytest.fixture(scope="session")
def local_server():
    "The real embedded SmolLM2 server (started if it is not already up, stopped after if started here)."
    from scibench.llm import get_model
    from scibench.server import serving
    with serving("local"):
        yield get_model("local")


@pytest.fixture
def results(tmp_path, monkeypatch):
    "Runs of this test go to a temporary results/ (the committed one is never touched)."
    d = tmp_path / "results"
    monkeypatch.setenv("SCIBENCH_RESULTS", str(d))
    return d


@pytest.fixture
def run_bench(results):
    "run_bench(bench, params, **execute_kw) → (meta, run folder): a whole run through `scibench.run.execute`."
    from scibench.run import execute
    def go(bench, params=None, **kw):
        kw = {"notebook": False, "progress": False, **kw}
        meta = execute(bench, params or {}, **kw)
        return meta, meta.get("dir")
    return go


@pytest.fixture
def own_data(tmp_path, monkeypatch):
    "own_data(*benches) → a data/ folder with only the shipped samples of `benches` and the papers' numbers (nothing downloaded)."
    def make(*benches):
        d = tmp_path / "data"
        for b in benches: shutil.copytree(ROOT / "data" / "samples" / b, d / "samples" / b, dirs_exist_ok=True)
        shutil.copytree(ROOT / "data" / "reference", d / "reference", dirs_exist_ok=True)
        monkeypatch.setenv("SCIBENCH_DATA", str(d))
        return d
    return make
