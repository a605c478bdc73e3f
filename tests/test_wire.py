"""The live request path: requests through aiohttp with openai's retry policy, checked against the openai package's
own functions; statuses retried and not; `retry-after`; Basic auth from a URL; what HTTP/1.1 allows is read; the
timeout bounds the whole request."""
import asyncio, inspect, json, math, re, threading, time
import pytest
from scibench.llm import LLM, ModelSpec, Request, msgs, _retry_delay, _should_retry, _retry_after


# -- a small scriptable server: statuses and headers per request, or a queue without a slot count ----------------------

class Scripted:
    """An aiohttp server in a thread. `plan(n, body) -> (status, headers, body dict)` answers the n-th chat attempt of a
    prompt; with `slots`, chat requests wait for one of `slots` workers of `service` seconds each (a queue that no
    route reports)."""

    def __init__(self, plan=None, slots=None, service=0.05):
        self.plan, self.slots, self.service = plan, slots, service
        self.attempts, self.times, self.inflight, self.peak, self.log = {}, [], 0, 0, []
        self._ready = threading.Event()
        threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True).start()
        assert self._ready.wait(10)

    async def _main(self):
        from aiohttp import web
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self._sem = asyncio.Semaphore(self.slots) if self.slots else None
        self.stop = asyncio.Event()
        self._ready.set()
        await self.stop.wait()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    async def _chat(self, request):
        from aiohttp import web
        body = await request.json()
        p = body["messages"][-1]["content"]
        n = self.attempts[p] = self.attempts.get(p, -1) + 1
        self.times.append((p, time.monotonic()))
        self.log.append(dict(request.headers))
        ok = {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
              "message": {"role": "assistant", "content": f"answer to {p}"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
        if self._sem is not None:
            self.inflight += 1
            self.peak = max(self.peak, self.inflight)
            try:
                async with self._sem:
                    await asyncio.sleep(self.service)
            finally:
                self.inflight -= 1
            return web.json_response(ok)
        status, headers, data = self.plan(n, body) if self.plan else (200, {}, ok)
        return web.json_response(ok if data is None else data, status=status, headers=headers)


def _llm(url, **kw):
    return LLM(ModelSpec("w", url, "w", **{"max_retries": 2, "timeout": 5.0, "structured": "none", **kw}), cache=False,
               progress=False)


# -- the policy is openai's ------------------------------------------------------------------------------------------

def _openai_client():
    import openai
    return openai.AsyncOpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=6)


HEADER_CASES = [{}, {"retry-after-ms": "20"}, {"retry-after": "3"}, {"retry-after": "1.5"}, {"retry-after": "200"},
                {"retry-after": "0"}, {"retry-after": "-4"}, {"retry-after": "soon"}, {"retry-after": "1e999"},
                {"retry-after-ms": "nan"}, {"x-should-retry": "true"}, {"x-should-retry": "false"},
                {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, {"retry-after-ms": "20", "retry-after": "7"}]


@pytest.mark.parametrize("headers", HEADER_CASES)
def test_retry_decisions_and_delays_are_openais(headers, monkeypatch):
    "`_should_retry` and `_retry_delay` give what the openai package's `_should_retry`/`_calculate_retry_timeout` give."
    import httpx2, openai._base_client as bc
    from openai._models import FinalRequestOptions
    c = _openai_client()
    for status in (400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504):
        r = httpx2.Response(status, headers=headers, request=httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))
        assert _should_retry(status, r.headers) == c._should_retry(r), (status, headers)
    opts = FinalRequestOptions.construct(method="post", url="/chat/completions")
    for jitter in (0.0, 0.37, 0.999):
        monkeypatch.setattr(bc, "random", lambda: jitter)
        for taken in range(7):
            theirs = c._calculate_retry_timeout(6 - taken, opts, httpx2.Headers(headers))
            ours = _retry_delay(taken, headers, rand=lambda: jitter)
            assert math.isclose(ours, theirs, abs_tol=0.01), (taken, jitter, headers, ours, theirs)


def test_policy_constants_are_openais():
    from openai import _constants as k
    from scibench import llm
    assert (llm.RETRY_INITIAL_S, llm.RETRY_MAX_S, llm.RETRY_AFTER_MAX_S) == (k.INITIAL_RETRY_DELAY, k.MAX_RETRY_DELAY,
                                                                                k.MAX_RETRY_AFTER_DELAY)
    assert _retry_after({"retry-after-ms": "250"}) == 0.25 and _retry_after({}) is None


# -- statuses retried and not, against a server ------------------------------------------------------------------------

@pytest.mark.parametrize("status,headers,retried,reason", [
    (408, {}, True, "408"), (409, {}, True, "409"), (429, {"retry-after-ms": "10"}, True, "429"),
    (500, {}, True, "5xx"), (503, {"retry-after": "0.01"}, True, "5xx"),
    (400, {}, False, None), (401, {}, False, None), (404, {}, False, None), (422, {}, False, None),
    (500, {"x-should-retry": "false"}, False, None), (400, {"x-should-retry": "true"}, True, "4xx"),
    (503, {"retry-after": "600"}, False, None)])
def test_each_status_is_retried_or_not_as_openai_does(status, headers, retried, reason):
    srv = Scripted(plan=lambda n, body: (status, headers, {"error": {"message": "no"}}) if n == 0 else (200, {}, None))
    llm = _llm(srv.base_url)
    r = llm.chat("q")
    assert srv.attempts["q"] == (1 if retried else 0)
    assert r["ok"] == retried
    assert llm.usage.retries == ({reason: 1} if retried else {})
    if not retried:
        assert r["error"].startswith(f"http {status}: ") and '"message": "no"' in r["error"], r["error"]


def test_max_retries_then_the_last_error_and_the_backoff_between():
    srv = Scripted(plan=lambda n, body: (500, {}, {"error": {"message": "down"}}))
    llm = _llm(srv.base_url, max_retries=3)
    t0 = time.monotonic()
    r = llm.chat("q")
    assert not r["ok"] and srv.attempts["q"] == 3 and llm.usage.retries == {"5xx": 3}
    assert r["error"] == 'http 500: InternalServerError {"message": "down"}'
    gaps = [b[1] - a[1] for a, b in zip(srv.times, srv.times[1:])]
    for i, g in enumerate(gaps):  # 0.5 s x 2^i less at most 25% jitter
        assert 0.5 * 2 ** i * 0.75 - 0.05 <= g <= 0.5 * 2 ** i + 0.5, gaps
    assert time.monotonic() - t0 >= 0.75 * 3.5


def test_retry_after_ms_is_honoured_not_the_backoff(fake_server):
    "The fake server's 429 and 500 say retry-after-ms: 20: two faults each cost ~20 ms, not 0.5 s + 1 s."
    fs = fake_server(fault_rate=1.0, faults=("429", "500"), max_faults=2)
    t0 = time.monotonic()
    res = _llm(fs.base_url, max_concurrency=8).map([Request(msgs(f"q{i}")) for i in range(8)])
    assert all(r["ok"] for r in res) and fs.calls > 8
    assert time.monotonic() - t0 < 0.5 * 0.75


def test_url_credentials_are_sent_as_basic_auth_and_a_key_as_bearer():
    srv = Scripted()
    assert _llm(srv.base_url).chat("a")["ok"]
    assert srv.log[-1]["Authorization"] == "Bearer no-key"
    url = srv.base_url.replace("http://", "http://alice:s%40cret@")
    r = _llm(url).chat("b")
    assert r["ok"] and srv.log[-1]["Authorization"] == "Basic YWxpY2U6c0BjcmV0"  # base64 of alice:s@cret
    assert "alice" not in json.dumps(r)


# -- LLM.__init__: at most 8 parameters, every keyword as before --------------------------------------------------------

def test_llm_init_has_at_most_8_parameters_and_takes_the_batch_keywords():
    assert len(inspect.signature(LLM.__init__).parameters) <= 8
    llm = LLM(ModelSpec("w", "http://127.0.0.1:9/v1", "w", structured="none"), cache=False, max_concurrency=3,
              progress=False, refresh=True, batch=True, batch_poll=0.5, batch_max_requests=7, batch_max_bytes=900)
    assert (llm.concurrency, llm.refresh, llm.batch, llm.batch_poll, llm.batch_max_requests, llm.batch_max_bytes) == (
        3, True, True, 0.5, 7, 900)
    with pytest.raises(TypeError):
        LLM(ModelSpec("w", "http://127.0.0.1:9/v1", "w", structured="none"), cache=False, batch_pol=1)


@pytest.mark.parametrize("kw", [dict(latency=0.1), dict(latency_dist=("lognormal", 0.05, 1.0))])
def test_a_server_whose_latency_does_not_grow_keeps_the_full_concurrency(fake_server, kw):
    fs = fake_server(**kw)
    llm = _llm(fs.base_url, max_concurrency=16)
    res = llm.map([Request(msgs(f"c{i}")) for i in range(96)])
    assert all(r["ok"] for r in res) and fs.peak_inflight == 16


# -- what HTTP/1.1 allows is read: framings, interim answers, cut answers; the timeout bounds the whole request -----

class Raw:
    """A TCP server in a thread: the n-th chat request (a POST) gets `answer(n)`, a list of parts sent in turn (bytes;
    a float: seconds to wait; None: close the connection). GET requests (the slot-count probe) get a 404."""

    def __init__(self, answer):
        self.answer, self.n, self.conns = answer, 0, 0
        self._ready = threading.Event()
        threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True).start()
        assert self._ready.wait(10)

    async def _main(self):
        srv = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = srv.sockets[0].getsockname()[1]
        self._ready.set()
        await asyncio.Event().wait()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    async def _handle(self, reader, writer):
        self.conns += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                m = re.search(rb"(?i)content-length: *(\d+)", head)
                await reader.readexactly(int(m.group(1)) if m else 0)
                if not head.startswith(b"POST"):
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    continue
                self.n += 1
                for part in self.answer(self.n - 1):
                    if part is None:
                        writer.close()
                        return
                    if isinstance(part, float):
                        await asyncio.sleep(part)
                    else:
                        writer.write(part)
                        await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def _completion(text="hi") -> bytes:
    return json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                       "content": text}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()


def _answer(body: bytes, *headers: str, status="200 OK") -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n").encode() + body


def _chunked(body: bytes, size=7) -> list:
    parts = [b"%x;ext=1\r\n" % len(body[i:i + size]) + body[i:i + size] + b"\r\n" for i in range(0, len(body), size)]
    return [b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n", *parts,
            b"0\r\nx-trailer: 1\r\n\r\n"]


@pytest.mark.parametrize("case", ["length", "chunked", "gzip", "deflate", "to the close", "100 continue", "split"])
def test_each_http_framing_gives_the_answer(case):
    import gzip, zlib
    b = _completion("framed")
    whole = _answer(b, f"content-length: {len(b)}")
    parts = {
        "length": [whole],
        "chunked": _chunked(b),
        "gzip": [_answer(gzip.compress(b), "content-encoding: gzip", f"content-length: {len(gzip.compress(b))}")],
        "deflate": [_answer(zlib.compress(b), "Content-Encoding: deflate", f"content-length: {len(zlib.compress(b))}")],
        "to the close": [_answer(b, "content-type: application/json"), None],
        "100 continue": [b"HTTP/1.1 100 Continue\r\n\r\n", _answer(b, f"content-length: {len(b)}")],
        "split": [x for i in range(0, len(whole), 5) for x in (whole[i:i + 5], 0.001)],  # 5 bytes at a time
    }[case]
    srv = Raw(lambda n: parts)
    llm = _llm(srv.base_url, max_retries=0, max_concurrency=1)
    res = llm.map([Request(msgs(f"q{i}")) for i in range(3)])
    assert [r["text"] for r in res] == ["framed"] * 3, res
    assert llm.usage.retries == {}
    assert srv.conns == (3 if case == "to the close" else 1)  # one at a time (max_concurrency 1): one connection


def test_keep_alive_reuses_one_connection_and_connection_close_is_honoured():
    b = _completion()
    srv = Raw(lambda n: [_answer(b, f"content-length: {len(b)}")])
    llm = _llm(srv.base_url, max_concurrency=1)
    assert all(r["ok"] for r in llm.map([Request(msgs(f"k{i}")) for i in range(5)]))
    assert srv.conns == 1 and srv.n == 5
    srv2 = Raw(lambda n: [_answer(b, f"content-length: {len(b)}", "connection: close")])
    llm2 = _llm(srv2.base_url, max_concurrency=1)
    assert all(r["ok"] for r in llm2.map([Request(msgs(f"k{i}")) for i in range(3)]))
    assert srv2.conns == 3


@pytest.mark.parametrize("bad", ["cut body", "garbage status", "bad chunk", "closed at once", "bad gzip"])
def test_a_broken_answer_is_a_connection_retry_then_the_good_one(bad):
    b = _completion("second")
    first = {
        "cut body": [_answer(b[:10], f"content-length: {len(b)}"), None],
        "garbage status": [b"HTTP/9 what\r\n\r\n"],
        "bad chunk": [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"],
        "closed at once": [None],
        "bad gzip": [_answer(b"nope", "content-encoding: gzip", "content-length: 4")],
    }[bad]
    srv = Raw(lambda n: first if n == 0 else [_answer(b, f"content-length: {len(b)}")])
    llm = _llm(srv.base_url, max_retries=2)
    r = llm.chat("q")
    assert r["ok"] and r["text"] == "second", r
    assert llm.usage.retries == {"connection": 1}
    srv2 = Raw(lambda n: first)
    r = _llm(srv2.base_url, max_retries=0).chat("q")
    assert not r["ok"] and r["error"].startswith("connection error (after retries): "), r


@pytest.mark.parametrize("how", ["drip", "silence", "100 continue"])
def test_the_timeout_bounds_the_whole_request(how):
    "A server dripping its answer a byte at a time, or saying nothing, or `100 Continue` each second: ended at the timeout."
    b = _completion("slow")
    a = _answer(b, f"content-length: {len(b)}")
    parts = {"drip": [a[:20]] + [x for c in a[20:] for x in (0.2, bytes([c]))], "silence": [a[:20], 30.0],
             "100 continue": [x for _ in range(30) for x in (b"HTTP/1.1 100 Continue\r\n\r\n", 1.0)]}[how]
    srv = Raw(lambda n: parts)
    t0 = time.monotonic()
    r = _llm(srv.base_url, max_retries=0, timeout=1.5).chat("q")
    assert not r["ok"] and r["error"] == "timeout (after retries)", r
    assert time.monotonic() - t0 < 5


def test_the_request_head_carries_the_key_and_the_body():
    "What reaches the server: one POST with Host, the key, JSON content type, its length and the body's bytes."
    srv = Scripted()
    r = _llm(srv.base_url).chat("hello")
    assert r["ok"]
    h = srv.log[-1]
    assert h["Host"] == f"127.0.0.1:{srv.port}" and h["Content-Type"] == "application/json"
    assert "gzip" in h["Accept-Encoding"] and h["User-Agent"].startswith("scibench")
    assert int(h["Content-Length"]) > len("hello") and h["Authorization"] == "Bearer no-key"


def test_an_environment_proxy_is_used_through_aiohttp(monkeypatch):
    "HTTP_PROXY set: the chat request goes to the proxy (aiohttp's path), not to the endpoint's own (dead) address."
    proxy = Scripted()
    for v in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    r = _llm("http://10.255.255.1:9/v1", max_retries=0).chat("via proxy")
    assert r["ok"] and r["text"] == "answer to via proxy" and proxy.attempts["via proxy"] == 0, r


# -- run_sync's event loop: Ctrl-C and SIGTERM stop a run ------------------------------------------------------

_SIGNAL_CHILD = r"""
import asyncio, os, signal, sys, threading, time
from bench.fakeserver import FakeServer
from scibench.llm import LLM, ModelSpec, Request, msgs, run_sync
from scibench.cli import install_signals

async def kind():
    return type(asyncio.get_running_loop()).__module__.split(".")[0]

install_signals()
with FakeServer(latency=30.0) as fs:
    llm = LLM(ModelSpec("s", fs.base_url, "s", structured="none", max_retries=0), cache=False, progress=False)
    threading.Timer(1.0, lambda: os.kill(os.getpid(), getattr(signal, sys.argv[1]))).start()
    t0 = time.monotonic()
    try:
        llm.map([Request(msgs(f"s{i}")) for i in range(4)])
        print("NOT INTERRUPTED")
    except KeyboardInterrupt:
        print("INTERRUPTED", run_sync(kind()), round(time.monotonic() - t0, 1), len(llm._lives), flush=True)
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupt_stops_a_map(sig, tmp_path):
    "A map waiting on 30 s answers, interrupted after 1 s: KeyboardInterrupt at once, the live client closed."
    import os, subprocess, sys
    env = dict(os.environ, SCIBENCH_CACHE=str(tmp_path / "c"), SCIBENCH_RESULTS=str(tmp_path / "r"))
    p = subprocess.run([sys.executable, "-c", _SIGNAL_CHILD, sig], env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout.split()
    assert out[:1] == ["INTERRUPTED"], (p.stdout, p.stderr[-2000:])
    assert out[1] == "asyncio" and float(out[2]) < 25 and out[3] == "0", p.stdout


def test_run_sync_inside_a_running_loop_uses_its_own_loop_in_a_thread():
    "As in Jupyter: called from a coroutine, run_sync runs the map in a fresh loop in a thread."
    from scibench.llm import run_sync

    async def outer():
        async def kind():
            return type(asyncio.get_running_loop()).__module__.split(".")[0], threading.current_thread().name
        return run_sync(kind()), threading.current_thread().name

    (k, inner), main = asyncio.run(outer())
    assert inner != main and k in ("uvloop", "asyncio")


def test_a_307_or_308_is_followed_with_the_body():
    "A redirect that keeps the method (307, 308) is followed, the body sent again, as the openai package's client does."
    b = _completion("moved")
    srv = Raw(lambda n: [_answer(b"", "content-length: 0", "location: /v1/chat/completions2",
                                 status="307 Temporary Redirect")] if n == 0 else [_answer(b, f"content-length: {len(b)}")])
    r = _llm(srv.base_url, max_retries=0).chat("q")
    assert r["ok"] and r["text"] == "moved" and srv.n == 2, r
