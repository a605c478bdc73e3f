import os, shutil, time
from collections import Counter
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# child processes (a fake server in its own process) import the development lab `bench/` from the root
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    "Every test gets its own response cache; results/ and the user's cache are never touched."
    monkeypatch.setenv("SCIBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SCIBENCH_ROOT", str(ROOT))
    yield


@pytest.fixture
def fake_server():
    "A fake OpenAI-compatible server on 127.0.0.1 (fault injection, counting)."
    from bench.fakeserver import FakeServer
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
    "Runs of this test go to a temporary results/, their figures to a temporary figures/ (the committed ones are never touched)."
    d = tmp_path / "results"
    monkeypatch.setenv("SCIBENCH_RESULTS", str(d))
    monkeypatch.setenv("SCIBENCH_FIGURES", str(tmp_path / "figures"))
    return d


@pytest.fixture
def run_bench(results):
    "run_bench(bench, params, **execute_kw) → (meta, run folder): a whole run through `scibench.run.execute`."
    from scibench.run import execute
    def go(bench, params=None, **kw):
        kw = {"notebook": False, "progress": False, "preset": "none", **kw}  # the parameters given, no model's preset
        meta = execute(bench, params or {}, **kw)
        return meta, meta.get("dir")
    return go


@pytest.fixture
def cli(monkeypatch):
    """cli(*args, env=None) → CompletedProcess(returncode, stdout, stderr): `scibench ARGS` run in this process, as
    `python -m scibench.cli ARGS` with captured output would run it (cwd the repository, `env` added to the
    environment for the call, an uncaught exception a traceback on stderr and exit 1), without the ~2 s of a new
    interpreter importing pandas and friends. The CLI's signal handlers are undone after. Tests of signals, kills and
    exit codes across processes start a real `subprocess` instead."""
    import io, signal, subprocess, traceback
    from scibench.cli import main

    def run(*args, env=None, timeout=None):   # timeout: what a subprocess would be given; unused here
        out, err = io.StringIO(), io.StringIO()
        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        with monkeypatch.context() as mp:
            for k, v in (env or {}).items(): mp.setenv(k, v)
            mp.chdir(ROOT); mp.setattr("sys.stdout", out); mp.setattr("sys.stderr", err)
            try:
                main([str(a) for a in args]); code = 0
            except SystemExit as e:   # as the interpreter ends: None is 0, a message is printed and is 1
                code = 0 if e.code is None else e.code
                if not isinstance(code, int): print(code, file=err); code = 1
            except Exception:
                traceback.print_exc(file=err); code = 1
            finally:
                for s, h in handlers.items(): signal.signal(s, h)
        return subprocess.CompletedProcess(["scibench", *args], code, out.getvalue(), err.getvalue())
    return run


@pytest.fixture
def canary_registry(tmp_path):
    """canary_registry(base_url, **fields) → a models.toml with one model `fake` (served id `fake-model`) whose key
    comes from $SCIBENCH_CANARY_KEY, one retry, a 5 s timeout, and `fields` added (TOML values)."""
    import json
    def make(base_url, **kw):
        extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in kw.items())
        p = tmp_path / "models.toml"
        p.write_text(f'[models.fake]\nbase_url = "{base_url}"\nmodel = "fake-model"\napi_key_env = "SCIBENCH_CANARY_KEY"\n'
                     f'max_retries = 1\ntimeout = 5\n{extra}')
        return p
    return make


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


# --------------------------------------------------------------------------- quiet output (issue 21): one progress line
class Progress:
    """With `-q`: one line `[done/total] passed · failed · skipped · time` (rewritten in place on a terminal, printed
    nowhere else) instead of a dot per test. A failing test's id is printed as it fails; its traceback comes in full
    at the end, as usual. Works under pytest-xdist (the controller counts the workers' reports)."""
    def __init__(self, tr):
        self.tr, self.tty = tr, bool(getattr(tr, "isatty", False))
        self.total, self.done, self.t0 = 0, 0, time.monotonic()
        self.outcome, self.counts = {}, Counter()

    def report(self, rep):
        was = self.outcome.get(rep.nodeid)
        if rep.failed: now = "failed" if rep.when == "call" else "error"
        elif rep.skipped: now = "skipped"
        else: now = "passed"
        if was in (None, "passed"): self.outcome[rep.nodeid] = now
        if rep.failed and was not in ("failed", "error"): self.say(f"{now.upper()} {rep.nodeid}")
        if rep.when == "teardown":
            self.done += 1; self.counts[self.outcome.pop(rep.nodeid, now)] += 1; self.show()

    def line(self) -> str:
        c, s = self.counts, int(time.monotonic() - self.t0)
        parts = [f"{c[k]} {k}" for k in ("passed", "failed", "error", "skipped") if c[k]]
        return f"[{self.done}/{self.total or '?'}] " + ", ".join(parts) + f"  {s // 60}:{s % 60:02d}"

    def show(self):
        if self.tty: self.tr.rewrite(self.line(), erase=True)

    def say(self, text: str):
        if self.tty: self.tr.rewrite(text, erase=True, red=True); self.tr.write("\n"); self.show()
        else: self.tr.write_line(text)

    def finish(self):
        if self.tty: self.tr.rewrite(self.line(), erase=True); self.tr.write("\n")


PROGRESS: list[Progress] = []   # the one Progress of this (controller) process, when `-q`


@pytest.hookimpl(trylast=True)      # after the terminal plugin has made its reporter
def pytest_configure(config):
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and config.get_verbosity() < 0 and not hasattr(config, "workerinput"): PROGRESS.append(Progress(tr))


@pytest.hookimpl(wrapper=True)
def pytest_report_teststatus(report, config):
    "No letter per test under `-q` (the progress line counts them); categories and words unchanged."
    res = yield
    return (res[0], "", res[2]) if PROGRESS and res else res


def pytest_sessionstart(session):
    for p in PROGRESS: p.tr._show_progress_info = False   # no "[ 10%]"


def pytest_collection_finish(session):
    for p in PROGRESS: p.total = len(session.items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    for p in PROGRESS: p.total = max(p.total, len(ids))


def pytest_runtest_logreport(report):
    for p in PROGRESS: p.report(report)


def pytest_sessionfinish(session):
    for p in PROGRESS: p.finish()
