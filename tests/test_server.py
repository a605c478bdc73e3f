"""The embedded server shared between processes (issue 9): the real SmolLM2 server on a free test port, a temporary
registry and cache; the server on the registry's own port is never touched."""
import json, os, signal, socket, subprocess, sys, time
from pathlib import Path
import pytest
from scibench.server import (SERVE_CODE, ServerError, serving, start_server, stop_server, read_pidfile, users, _pidfile, _usersdir,
                             is_our_server, _stat)
import psutil
from scibench.llm import get_model

ROOT = Path(__file__).resolve().parent.parent
NAME = "tlocal"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def write_registry(path: Path, port: int, model: str = "smollm2-135m-instruct"):
    path.write_text(f"""[models.{NAME}]
base_url = "http://127.0.0.1:{port}/v1"
model = "{model}"
embedded = true
structured = "llama"
max_concurrency = 2
timeout = 120
max_retries = 2
context = 2048
""")


def servers_on(port: int) -> list[int]:
    "Pids of every llama_cpp.server process on `port` (`_launch`'s or `-m llama_cpp.server`; through /proc, not our pid file)."
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit(): continue
        try: args = (d/"cmdline").read_bytes().split(b"\0")
        except OSError: continue
        if (b"llama_cpp.server" in args or SERVE_CODE.encode() in args) and b"--port" in args and args[args.index(b"--port") + 1] == str(port).encode(): out.append(int(d.name))
    return out


def port_closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1); return s.connect_ex(("127.0.0.1", port)) != 0


def wait_for(cond, timeout: float, what: str):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout: raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def reg(tmp_path, monkeypatch):
    "A temporary registry with model `tlocal` on a free port; every server left on that port is killed afterwards."
    port = free_port()
    write_registry(tmp_path/"models.toml", port)
    monkeypatch.setenv("SCIBENCH_MODELS", str(tmp_path/"models.toml"))
    yield port
    for pid in servers_on(port):
        try: os.kill(pid, signal.SIGKILL)
        except ProcessLookupError: pass


def cli(*args):
    return subprocess.Popen([sys.executable, "-m", "scibench.cli", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=os.environ.copy())


# --------------------------------------------------------------------------- pid files (no model)
@pytest.mark.parametrize("content", ["", "   \n", "abc", "0", "-5", "12x", '{"pid": "7"}', "[1]"])
def test_stop_with_empty_or_garbage_pidfile_is_stale(reg, content):
    spec = get_model(NAME)
    _pidfile(spec).parent.mkdir(parents=True, exist_ok=True); _pidfile(spec).write_text(content)
    r = stop_server(NAME)
    assert not r["stopped"] and r["message"].startswith("stale pid file") and "signalled nothing" in r["message"]
    assert not _pidfile(spec).exists()


def test_stop_never_signals_a_process_that_is_not_our_server(reg, tmp_path):
    "Pid file naming an unrelated live process (its own process group, as our server has): removed, nothing signalled."
    spec = get_model(NAME)
    _pidfile(spec).parent.mkdir(parents=True, exist_ok=True)
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    # a process that even looks like a llama_cpp.server, but on another port
    lookalike = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "llama_cpp.server", "--port", str(reg + 1)],
                                 start_new_session=True)
    try:
        for pid, text in [(sleeper.pid, str(sleeper.pid)), (sleeper.pid, json.dumps(dict(pid=sleeper.pid, by="serving"))),
                          (lookalike.pid, json.dumps(dict(pid=lookalike.pid, by="serve")))]:
            _pidfile(spec).write_text(text)
            r = subprocess.run([sys.executable, "-m", "scibench.cli", "stop", "--model", NAME], cwd=ROOT, capture_output=True, text=True,
                               timeout=60)
            assert r.returncode == 0, r.stderr
            assert "stale pid file" in r.stdout and f"pid {pid}" in r.stdout and "signalled nothing" in r.stdout, r.stdout
            assert not _pidfile(spec).exists()
            time.sleep(0.2)
            assert sleeper.poll() is None and lookalike.poll() is None, "a process that is not our server was signalled"
        assert is_our_server(lookalike.pid, spec)[0] is False
    finally:
        sleeper.kill(); lookalike.kill(); sleeper.wait(); lookalike.wait()


def test_a_listener_serving_another_model_is_refused(reg, tmp_path, monkeypatch, fake_server):
    fs = fake_server()   # serves the model id "fake"
    write_registry(tmp_path/"models.toml", fs.port)
    with pytest.raises(ServerError, match=rf"port {fs.port} .*serves 'fake', not 'smollm2-135m-instruct'"):
        start_server(NAME)
    with pytest.raises(ServerError, match="serves 'fake'"):
        with serving(NAME): pass
    r = subprocess.run([sys.executable, "-m", "scibench.cli", "serve", "--model", NAME], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and f"port {fs.port}" in r.stderr and "'fake'" in r.stderr and "started" not in r.stdout, (r.stdout, r.stderr)
    assert not _pidfile(get_model(NAME)).exists() and servers_on(fs.port) == []


def test_a_listener_that_does_not_answer_is_reported(reg):
    with socket.socket() as s:   # listens, never answers
        s.bind(("127.0.0.1", reg)); s.listen(8)
        t0 = time.monotonic()
        with pytest.raises(ServerError, match=rf"port {reg} .*not a scibench server.*no answer to GET /models within 1s"):
            start_server(NAME, check_timeout=1)
        assert time.monotonic() - t0 < 10
    assert servers_on(reg) == []


# --------------------------------------------------------------------------- the real embedded server
def test_start_timeout_is_reported_and_the_server_killed(reg):
    spec = get_model(NAME)
    with pytest.raises(ServerError, match=r"did not answer within 0s \(killed it\); see .*server-tlocal\.log"):
        start_server(NAME, wait=0.3)
    assert servers_on(reg) == [] and not _pidfile(spec).exists()


USER = r"""
import json, sys, time
from pathlib import Path
from scibench.server import serving, read_pidfile, users, is_our_server
from scibench.llm import LLM, Request, msgs, get_model
role, n, out, other = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
def wait(p):
    t0 = time.time()
    while not p.exists():
        if time.time() - t0 > 180: raise SystemExit(f"{role}: timed out waiting for {p}")
        time.sleep(0.1)
with serving("tlocal") as s:
    spec = get_model("tlocal"); pid = read_pidfile(spec)["pid"]
    Path(str(out) + ".joined").write_text(str(pid))
    alive_after_a = None
    if role == "B":                      # B sends its requests only after A has left
        wait(other); alive_after_a = is_our_server(pid, spec)[0]
    res = LLM(spec, cache=False, progress=False).map([Request(msgs(f"{role} {i}: say hi"), max_tokens=8) for i in range(n)])
    if role == "A": wait(other)          # A leaves only once B has joined
    n_users = len(users(spec))
out.write_text(json.dumps(dict(started=s.started, pid=pid, ok=sum(r["ok"] for r in res), errors=[r["error"] for r in res if not r["ok"]],
                               users=n_users, alive_after_a=alive_after_a)))
"""


def test_two_runs_share_the_server_the_last_one_stops_it(reg, tmp_path):
    spec = get_model(NAME)
    a_out, b_out = tmp_path/"a.json", tmp_path/"b.json"
    run = lambda *args: subprocess.Popen([sys.executable, "-c", USER, *args], cwd=ROOT, env=os.environ.copy())
    a = run("A", "2", str(a_out), str(b_out) + ".joined")
    time.sleep(2)
    b = run("B", "4", str(b_out), str(a_out))
    assert a.wait(240) == 0
    ra = json.loads(a_out.read_text())
    pid = ra["pid"]
    assert ra["started"] == [NAME] and ra["ok"] == 2 and ra["users"] == 2
    assert b.wait(240) == 0
    rb = json.loads(b_out.read_text())
    assert rb["started"] == [] and rb["pid"] == pid and rb["ok"] == 4 and rb["errors"] == [] and rb["users"] == 1
    assert rb["alive_after_a"] is True, "the first run's exit must not stop the server the second still uses"
    wait_for(lambda: servers_on(reg) == [], 20, "the last user to stop the server")
    assert not _pidfile(spec).exists() and users(spec) == [] and port_closed(reg)


@pytest.mark.parametrize("tries", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_concurrent_serve_leaves_one_server_that_stop_stops(reg, tries):
    "Three `scibench serve` at once: one says started, the others already running; one server; `stop` stops it."
    spec = get_model(NAME)
    starters = 3
    for _ in range(tries):
        ps = [cli("serve", "--model", NAME) for _ in range(starters)]
        outs = [p.communicate(timeout=240) for p in ps]
        assert all(p.returncode == 0 for p in ps), outs
        said = sorted(o.split()[0] for o, _ in outs)
        assert said == ["already", "already", "started"], outs
        live = servers_on(reg)
        assert len(live) == 1 and read_pidfile(spec)["pid"] == live[0] and read_pidfile(spec)["by"] == "serve"
        r = subprocess.run([sys.executable, "-m", "scibench.cli", "stop", "--model", NAME], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.startswith(f"stopped the embedded server (pid {live[0]}") and "no users" in r.stdout, r.stdout
        assert servers_on(reg) == [] and not _pidfile(spec).exists() and port_closed(reg)


def _stopped_within(p, secs: float, stacks: Path):
    "Wait for client `p`; if it is still alive after `secs`, fail with its threads' stacks (faulthandler on SIGUSR1)."
    try:
        p.wait(secs)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGUSR1); time.sleep(1); p.kill()
        raise AssertionError(f"the client did not exit within {secs:.0f}s of SIGTERM; its stacks:\n{stacks.read_text()}") from None


def test_sigterm_stops_what_the_process_started(reg, tmp_path):
    "SIGTERM while using the server, and SIGTERM while it is still starting: no server is left behind."
    spec = get_model(NAME)
    code = ("import faulthandler, signal, sys, time\nfrom pathlib import Path\nfrom scibench.server import serving\n"
            "faulthandler.register(signal.SIGUSR1, open(sys.argv[1] + '.stacks', 'w'), all_threads=True)\n"
            "with serving('tlocal'):\n    Path(sys.argv[1]).write_text('up')\n    time.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp_path/"up")], cwd=ROOT, env=os.environ.copy(), stderr=subprocess.DEVNULL)
    wait_for(lambda: (tmp_path/"up").exists() or p.poll() is not None, 180, "the server")
    assert len(servers_on(reg)) == 1 and len(users(spec)) == 1
    p.send_signal(signal.SIGTERM); _stopped_within(p, 60, tmp_path/"up.stacks")
    assert servers_on(reg) == [] and not _pidfile(spec).exists() and not list(_usersdir(spec).glob("*.lease"))
    # interrupted while the server is loading
    log = Path(os.environ["SCIBENCH_CACHE"])/f"server-{NAME}.log"
    size = log.stat().st_size
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp_path/"up2")], cwd=ROOT, env=os.environ.copy(), stderr=subprocess.DEVNULL)
    wait_for(lambda: servers_on(reg) or p.poll() is not None, 60, "the server process")
    p.send_signal(signal.SIGTERM); _stopped_within(p, 60, tmp_path/"up2.stacks")
    assert not (tmp_path/"up2").exists() and log.stat().st_size >= size
    wait_for(lambda: servers_on(reg) == [], 10, "the half-started server to be killed")
    assert not _pidfile(spec).exists()


def test_a_frozen_server_is_reported_not_used(reg):
    spec = get_model(NAME)
    assert start_server(NAME) is True
    pid = read_pidfile(spec)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(lambda: _stat(pid)[0] == psutil.STATUS_STOPPED, 10, "the server to stop")
        t0 = time.monotonic()
        with pytest.raises(ServerError, match=rf"\(pid {pid}\) is stopped"):
            with serving(NAME): pass
        assert time.monotonic() - t0 < 15
    finally:
        r = stop_server(NAME)   # SIGCONT + SIGTERM, SIGKILL if need be
    assert r["stopped"] and servers_on(reg) == []


# --------------------------------------------------------------------------- another checkout's server (issue 20, item 12)
OTHER = ("import socket, sys, time\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "s.bind(('127.0.0.1', int(sys.argv[3]))); s.listen(8)\nopen(sys.argv[-1], 'w').write('up')\ntime.sleep(120)\n")


@pytest.mark.parametrize("by", ["serve", "serving"])
def test_another_checkouts_busy_server_on_the_port_is_joined_not_refused(reg, tmp_path, by):
    """A second checkout (its own cache folder) finds the port held by the first checkout's embedded server, busy (no
    answer to GET /models): it is recognised as ours and joined as one more user (a lease in the first checkout's
    users folder), never refused as 'not a scibench server'; the last user stops it only if a `serving` started it."""
    spec = get_model(NAME)
    home = tmp_path / "other-checkout-cache"; home.mkdir()
    up = tmp_path / "up"
    p = subprocess.Popen([sys.executable, "-c", OTHER, "llama_cpp.server", "--port", str(reg), "--model_alias", spec.model, str(up)],
                         env={**os.environ, "SCIBENCH_SERVER_HOME": str(home), "SCIBENCH_SERVER_NAME": NAME}, start_new_session=True)
    try:
        wait_for(up.exists, 30, "the other checkout's server")
        (home / f"server-{NAME}.pid").write_text(json.dumps(dict(pid=p.pid, port=reg, model=spec.model, by=by)))
        t0 = time.monotonic()
        with serving(NAME, check_timeout=1) as s:
            assert s.started == [] and time.monotonic() - t0 < 10
            assert users(spec, home, NAME) == [os.getpid()], "joined as a user of the other checkout's server"
            assert not _pidfile(spec).exists(), "our own pid file is not written for a server we did not start"
        assert users(spec, home, NAME) == []
        if by == "serve":
            assert p.poll() is None, "a server that `scibench serve` started keeps running"
            r = stop_server(NAME)   # this checkout's `stop` names the other checkout's server and leaves it alone
            assert not r["stopped"] and f"pid {p.pid}, was started from {home}; not touched" in r["message"], r
            assert p.poll() is None
        else:
            wait_for(lambda: p.poll() is not None, 20, "the last user to stop the server a `serving` started")
            assert not (home / f"server-{NAME}.pid").exists()
    finally:
        if p.poll() is None: p.kill()
        p.wait()


def test_another_checkouts_server_with_another_model_is_refused(reg, tmp_path):
    up = tmp_path / "up"
    p = subprocess.Popen([sys.executable, "-c", OTHER, "llama_cpp.server", "--port", str(reg), "--model_alias", "other-model", str(up)],
                         start_new_session=True)
    try:
        wait_for(up.exists, 30, "the other server")
        with pytest.raises(ServerError, match=rf"port {reg} .*another scibench checkout's embedded server .*'other-model'"):
            with serving(NAME, check_timeout=1): pass
        assert p.poll() is None
    finally:
        p.kill(); p.wait()


HOLDER = r"""
import sys, time
from pathlib import Path
from scibench.server import serving
with serving("tlocal"):
    Path(sys.argv[1]).write_text("up")
    time.sleep(600)
"""


def test_the_server_a_killed_run_started_stops_by_itself(reg, tmp_path):
    "A run killed outright (SIGKILL: no release) leaves no server behind; one `scibench serve` started stays."
    spec, up = get_model(NAME), tmp_path / "up"
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(up)], cwd=ROOT, env=os.environ.copy())
    try:
        wait_for(up.exists, 240, "the run to start its server")
        pid = read_pidfile(spec)["pid"]
        assert servers_on(reg) == [pid] and read_pidfile(spec)["by"] == "serving"
    finally:
        p.kill(); p.wait()
    wait_for(lambda: servers_on(reg) == [] and port_closed(reg), 30, "the orphaned server to stop itself")
    assert not _pidfile(spec).exists()
