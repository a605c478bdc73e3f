"""The live request path (issue 22): bytes through aiohttp with openai's retry policy, checked against the openai package's
own functions; statuses retried and not; `retry-after`; Basic auth from a URL; the back-off of issue 20 item 11 for a
server that queues without saying its slot count."""
import asyncio, inspect, json, math, threading, time
import pytest
from scibench.llm import LLM, ModelSpec, Request, msgs, _retry_delay, _should_retry, _retry_after, backoff_limit, _BACKOFF


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


# -- issue 20 item 11: back off when latency grows with concurrency -----------------------------------------------------

def test_backoff_limit_on_samples():
    queue = [(k, 0.05 * (k // 2 + 1)) for k in range(16)]  # a 2-slot queue: latency steps up with the in-flight count
    assert backoff_limit(queue, 16) <= 4
    flat = [(k, 0.1 + 0.001 * (k % 3)) for k in range(16)]
    assert backoff_limit(flat, 16) == 16
    same_k = [(15, 0.1 * (i + 1)) for i in range(16)]  # one in-flight count: nothing to compare
    assert backoff_limit(same_k, 16) == 16


def test_a_queueing_server_without_a_slot_count_gets_fewer_requests_at_once():
    "2 slots, 100 ms each, no /props: 16 at once queue 8 deep; the client backs off to half or fewer, nothing fails."
    srv = Scripted(slots=2, service=0.1)
    llm = _llm(srv.base_url, max_concurrency=16, timeout=10.0)
    res = llm.map([Request(msgs(f"a{i}")) for i in range(48)])
    assert all(r["ok"] for r in res)
    learned = _BACKOFF.get(f"{srv.base_url}|w")
    assert learned is not None and learned <= 8, learned
    srv.peak = 0
    res = llm.map([Request(msgs(f"b{i}")) for i in range(24)])  # the next map starts at the learned limit
    assert all(r["ok"] for r in res) and srv.peak <= learned, (srv.peak, learned)


@pytest.mark.parametrize("kw", [dict(latency=0.1), dict(latency_dist=("lognormal", 0.05, 1.0))])
def test_a_server_whose_latency_does_not_grow_keeps_the_full_concurrency(fake_server, kw):
    fs = fake_server(**kw)
    llm = _llm(fs.base_url, max_concurrency=16)
    res = llm.map([Request(msgs(f"c{i}")) for i in range(96)])
    assert all(r["ok"] for r in res) and fs.peak_inflight == 16
    assert f"{fs.base_url}|w" not in _BACKOFF
