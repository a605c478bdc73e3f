"""The client against hostile servers and proxies: the key goes to no proxy; a key a server echoes (in a finish reason,
a malformed header, an error body) is in no result and no file; `timeout` bounds the whole request; an answer has a
size limit; the preflight (`ping`) redacts what it says."""
import asyncio, gzip, json, re, threading, time
from pathlib import Path
import pytest
from scibench.llm import LLM, Cache, ModelSpec, Request, msgs, ping

KEY = "sk-canary-CLIENT-7d1e0b5a9c"


class Raw:
    """A TCP server in a thread: each connection's bytes are recorded; `answer(head)` gives the bytes to send back (a
    float: seconds to wait; None: close)."""

    def __init__(self, answer):
        self.answer, self.seen = answer, []
        ready = threading.Event()

        async def main():
            srv = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = srv.sockets[0].getsockname()[1]
            ready.set()
            await asyncio.Event().wait()

        threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
        assert ready.wait(10)

    async def _handle(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                m = re.search(rb"(?i)content-length: *(\d+)", head)
                body = await reader.readexactly(int(m.group(1))) if m else b""
                self.seen.append(head + body)
                for part in self.answer(head):
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


def _spec(url, monkeypatch, **kw):
    monkeypatch.setenv("SCIBENCH_CLIENT_KEY", KEY)
    return ModelSpec("k", url, "k", api_key_env="SCIBENCH_CLIENT_KEY",
                     **{"structured": "none", "max_retries": 0, "timeout": 5.0, **kw})


def _reply(status: str, body: bytes, *headers: str) -> list:
    head = f"HTTP/1.1 {status}\r\ncontent-length: {len(body)}\r\n" + "".join(h + "\r\n" for h in headers)
    return [head.encode() + b"\r\n" + body]


def test_the_key_never_reaches_a_proxy(monkeypatch):
    "HTTPS_PROXY at a recording proxy: the request goes to it as a CONNECT that holds no key; a loopback endpoint skips it."
    proxy = Raw(lambda head: _reply("502 Bad Gateway", b""))
    for v in ("NO_PROXY", "no_proxy", "https_proxy", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    r = LLM(_spec("https://api.example.invalid/v1", monkeypatch), cache=False, progress=False).chat("q")
    assert not r["ok"] and proxy.seen and proxy.seen[0].startswith(b"CONNECT "), (r, proxy.seen)
    assert not any(KEY.encode() in x for x in proxy.seen), proxy.seen
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    local = Raw(lambda head: _reply("200 OK", json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()))
    n = len(proxy.seen)
    r = LLM(_spec(f"http://127.0.0.1:{local.port}/v1", monkeypatch), cache=False, progress=False).chat("q")
    assert r["ok"] and len(proxy.seen) == n and KEY.encode() in local.seen[-1]  # sent to the endpoint, directly


def _echo(head: bytes) -> list:
    "The key the request carried, echoed back: in a finish reason, in a malformed header, in an error body."
    key = re.search(rb"Bearer (\S+)", head).group(1).decode()
    prompt = head  # the kind is in the path's query
    if b"kind=finish" in prompt:
        body = {"choices": [{"message": {"content": f"text {key}"}, "finish_reason": f"stop {key}"}]}
        return _reply("200 OK", json.dumps(body).encode())
    if b"kind=header" in prompt:
        return _reply("200 OK", b"{}", f"X-Echo {key}")  # no colon: a malformed header line
    return _reply("401 Unauthorized", json.dumps({"error": {"message": f"bad key {key}"}}).encode())


@pytest.mark.parametrize("kind", ["finish", "header", "error"])
def test_an_echoed_key_is_in_no_result_and_no_file(kind, monkeypatch, tmp_path):
    srv = Raw(_echo)
    spec = _spec(f"http://127.0.0.1:{srv.port}/v1?kind={kind}", monkeypatch)
    llm = LLM(spec, cache=Cache(tmp_path / "c.sqlite"), progress=False)
    res = llm.map([Request(msgs("q"))])
    assert srv.seen and KEY.encode() in srv.seen[0]  # the key was sent, and echoed
    assert KEY not in json.dumps(res) and (res[0]["ok"] or "[redacted" in res[0]["error"] or kind == "header"), res
    if kind == "finish":
        assert res[0]["finish_reason"] == "stop [redacted $SCIBENCH_CLIENT_KEY]", res
    (tmp_path / "res.json").write_text(json.dumps(res))
    llm.cache.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for f in Path(tmp_path).rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f


def test_a_gzip_bomb_is_a_counted_failure_not_memory(monkeypatch):
    "An answer of 256 MB of zeros, gzipped to a few hundred KB: read up to 32 MB, then a failure record."
    bomb = gzip.compress(b"0" * (256 * 2**20), compresslevel=9)
    srv = Raw(lambda head: _reply("200 OK", bomb, "content-encoding: gzip", "content-type: application/json"))
    llm = LLM(_spec(f"http://127.0.0.1:{srv.port}/v1", monkeypatch, max_retries=2), cache=False, progress=False)
    t0 = time.monotonic()
    r = llm.chat("q")
    assert not r["ok"] and "answer over 32 MB" in r["error"], r
    assert llm.usage.failures == 1 and len(srv.seen) == 1 and time.monotonic() - t0 < 30


def test_ping_redacts_what_it_says(monkeypatch):
    "A key with a line break inside makes the HTTP library refuse its header, quoting it: `ping` says it redacted."
    monkeypatch.setenv("SCIBENCH_CLIENT_KEY", KEY + "\nX")
    spec = ModelSpec("k", "http://127.0.0.1:9/v1", "k", api_key_env="SCIBENCH_CLIENT_KEY")
    why, ids = ping(spec, timeout=2)
    assert why and ids == [] and KEY not in why, why
