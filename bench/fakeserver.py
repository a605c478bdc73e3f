"""A fake OpenAI-compatible server on 127.0.0.1 for fault injection and speed tests — never a
substitute for the end-to-end test with the real embedded model."""


from __future__ import annotations
import asyncio, collections, hashlib, importlib, json, math, os, re, statistics, threading, time
from dataclasses import dataclass, fields, replace

__all__ = ['FakeOptions', 'FakeServer', 'serve_forever']

@dataclass
class FakeOptions:
    "What a `FakeServer` does (its docstring says what each field means)."

    latency: float = 0.0
    fault_rate: float = 0.0
    faults: tuple = ("429", "500", "timeout", "reset")
    max_faults: int = 2
    permanent: str | None = None
    reply: object = None
    hang: float = 30.0
    unauthorized: str | None = None
    prefix_cache: bool = False
    batch_delay: float = 0.2
    batch_expire: str | None = None
    batch_error: str | None = None
    batch_missing: str | None = None
    batch_reject: str | None = None
    latency_dist: tuple | None = None
    slow: dict | None = None
    echo_auth: str | None = None
    slots: int | None = None
    batch_create_drop: int = 0
    batch_create_hang: float = 0.0
    structured: str | None = None


class FakeServer:
    """OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 in a background thread.

    `latency`: seconds before answering; `slow`: {substring of a prompt: extra seconds} (one slow request on purpose);
    `latency_dist`: `("lognormal", median_s, sigma)` draws each request's latency
    from a lognormal (mean = median·exp(σ²/2)), deterministically from the request's hash (a rerun sees the same
    latencies; it replaces `latency`); `fault_rate`: share of distinct requests that fail first;
    `faults`: kinds drawn from `FAULTS` ("html", "array", "nochoices", "badjson" are HTTP 200 bodies that are
    not chat completions; "badjson" is a completion truncated halfway); `max_faults`: at most this many
    failed attempts per request; `permanent`: a substring of the prompt that always gets HTTP 400;
    `unauthorized`: a substring of the prompt that gets HTTP 401 whose body echoes the Authorization header
    (a careless server); `reply`: function(body dict) → answer text (default echoes a score); `prefix_cache`:
    report `usage.prompt_tokens_details.cached_tokens` as a provider's prefix cache would (prompt words in
    leading blocks of `BLOCK` words already seen in an earlier prompt).

    Batch API: `batch_delay`: seconds from a batch's creation to its completion; `batch_expire`, `batch_error`,
    `batch_missing`: substrings of a prompt whose line expires unanswered, gets HTTP 500, or is left out;
    `batch_reject`: a substring of a prompt that makes its whole batch fail validation; `batch_create_drop`: the first
    this many batch creations create the batch but drop the connection before answering; `batch_create_hang`: seconds
    to wait after creating a batch before answering (a client killed meanwhile never learns its id). `GET /batches`
    lists batches newest first (`limit`, `after`), as OpenAI's API does.

    A careless or small server: `echo_auth`: a substring of a prompt whose HTTP 200 answer quotes the Authorization
    header; `slots`: chat requests handled at once (the rest wait in the server's queue, as llama.cpp's do; `GET /props`
    says `total_slots`, as llama.cpp's does).

    Structured output: `structured` is what the server does with a `response_format`: None ignores it (the answer is
    text); "json_schema" follows OpenAI's json_schema form and refuses others (HTTP 400); "llama" is llama.cpp's server
    (`GET /props` with its settings, `/models` owned by llamacpp, follows its json_object+schema form and json_schema);
    "reject" refuses any (HTTP 400). A followed format's answer is an instance of its schema (what a grammar forces).
    The client's structured-output probe (header `X-Scibench-Probe`) is answered at once, outside the counts, faults
    and latencies: the tests count the benchmark's requests."""

    BLOCK = 16
    FAULTS = ("429", "500", "timeout", "reset", "html", "array", "nochoices", "badjson")

    def __init__(self, options: FakeOptions | None = None, **kw):
        "`options` (default `FakeOptions()`) with any of its fields given by name (see above)."
        o = replace(options or FakeOptions(), **kw)
        self.options = o
        structured, faults, latency_dist, slow = o.structured, o.faults, o.latency_dist, o.slow
        if structured not in (None, "json_schema", "llama", "reject"):
            raise ValueError(f"structured must be None, 'json_schema', 'llama' or 'reject', got {structured!r}")
        bad = set(faults) - set(self.FAULTS)
        if bad:
            raise ValueError(f"unknown fault kind(s) {sorted(bad)}; kinds: {', '.join(self.FAULTS)}")
        for f in fields(o):
            setattr(self, f.name, getattr(o, f.name))
        self.faults = tuple(faults)
        if latency_dist is not None:
            kind, *args = latency_dist
            if kind != "lognormal" or len(args) != 2 or args[0] <= 0 or args[1] < 0:
                raise ValueError(f"latency_dist must be ('lognormal', median_s > 0, sigma >= 0), got {latency_dist!r}")
        self.latency_dist = tuple(latency_dist) if latency_dist is not None else None
        self.slow = dict(slow or {})  # substring of a prompt → extra seconds before answering it
        self.attempts = collections.Counter()
        self.completions = collections.Counter()
        self.injected = collections.Counter()  # faults injected, by kind
        self.headers_seen: list = []
        self.inflight = 0
        self.peak_inflight = 0  # chat requests being handled at once
        self.delays: list = []  # each chat attempt's seconds before its answer, in arrival order
        self.port = None
        self._loop = None
        self._ready = threading.Event()
        self._blocks = set()  # hashes of prompt prefixes seen, per block of words
        self._slot_sem = None
        self._conns: set = set()  # open connections (`_Conn`)
        self._encoded: dict = {}  # (second, model, text, prompt words) → the HTTP answer of a plain completion
        self.batch_lists = 0  # GET /batches calls
        self.files: dict = {}
        self.batches: dict = {}
        self._batch_input: dict = {}  # id → bytes; id → batch object; id → lines
        self.batches_created = 0
        self.batch_polls = 0
        self.batch_lines = collections.Counter()

    # -- fault plan ------------------------------------------------------
    def _plan(self, key: str) -> list:
        h = int(key[:16], 16)
        if (h % 10_000) / 10_000 >= self.fault_rate:
            return []
        n = 1 + (h >> 20) % self.max_faults
        return [self.faults[(h >> (24 + 4 * i)) % len(self.faults)] for i in range(n)]

    def delay(self, key: str) -> float:
        """Seconds before answering the request with hash `key` (hex): `latency`, or a draw from `latency_dist` fixed by
        the hash."""
        if self.latency_dist is None:
            return self.latency
        _, median, sigma = self.latency_dist
        u = (int(key[16:32], 16) + 0.5) / 16**16  # bits the fault plan does not use
        return median * math.exp(sigma * statistics.NormalDist().inv_cdf(u))

    def _answer(self, body: dict) -> str:
        if self._format(body)[0] == "follow":  # a grammar forces an instance of the schema
            return json.dumps(_instance(self._format(body)[1]))
        if self.reply:
            return self.reply(body)
        last = body["messages"][-1]["content"]
        return f"Rationale: fine. Therefore, the score is: {1 + len(last) % 5}"

    def _format(self, body: dict) -> tuple:
        "What this server does with the request's response_format → (follow | refuse | ignore, its schema)."
        rf = body.get("response_format")
        if not isinstance(rf, dict) or self.structured is None:
            return "ignore", None
        kind = rf.get("type")
        schema = rf.get("json_schema", {}).get("schema") if kind == "json_schema" else rf.get("schema")
        ok = {"json_schema": ("json_schema",), "llama": ("json_schema", "json_object")}.get(self.structured, ())
        return ("follow", schema or {}) if kind in ok else ("refuse", None)

    async def _probe(self, req, writer):
        "The client's one-token structured-output probe, answered as this server would: a JSON start, 400 or text."
        verdict = self._format(req)[0]
        if verdict == "refuse":
            return await self._send(writer, 400, {"error": {"message": "response_format is not supported"}})
        await self._send(writer, 200, self._completion(req, "{" if verdict == "follow" else "Hello"))

    @property
    def calls(self) -> int:
        return sum(self.attempts.values())

    def stats(self, delays: bool = False) -> dict:
        """Counts a client in another process can read (`GET /v1/stats`): attempts, completions, peak chat requests in
        flight; `delays` (`GET /v1/stats?delays=1`): each chat attempt's delay in arrival order, too."""
        return dict(
            calls=self.calls,
            completions=sum(self.completions.values()),
            peak_inflight=self.peak_inflight,
            batches_created=self.batches_created,
            attempts_timed=len(self.delays),
            **(dict(delays=self.delays) if delays else {}),
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- HTTP --------------------------------------------------------------
    def _request(self, conn, method: str, path: str, headers: dict, body: bytes):
        """Route one request of `conn`: a plain chat answer (no fault this attempt, no slots, `_chat` not replaced) is
        answered at once or on a timer, without a task; everything else runs in a task (`_serve`)."""
        self.headers_seen.append(headers)
        if (
            method == "POST"
            and path.split("?")[0].endswith("/chat/completions")
            and "x-scibench-probe" not in headers
            and not self.slots
            and "_chat" not in vars(self)
            and type(self)._chat is FakeServer._chat
        ):
            req = json.loads(body)
            key = self._key(req)
            plan = self._plan(key) if self.fault_rate else ()
            if self.attempts[key] >= len(plan):  # this attempt is answered
                self.attempts[key] += 1
                self.inflight += 1
                self.peak_inflight = max(self.peak_inflight, self.inflight)
                delay = self._delay_of(req, key)
                if delay:
                    self._answer_at(conn, req, headers, key, time.perf_counter() + delay)
                else:
                    self._answer_now(conn, req, headers, key)
                return
            body = req
        self._loop.create_task(self._serve(conn, method, path, headers, body))

    def _answer_at(self, conn, req, headers, key, when: float):
        """`_answer_now` at `when` (perf_counter), never before: an event loop's timers run on a clock of whole
        milliseconds and may fire up to one early; such a timer is set again a millisecond on (not sooner: a timer
        under a millisecond fires at once, and the loop would spin until `when`)."""
        left = when - time.perf_counter()
        if left > 0:
            self._loop.call_later(max(left, 0.001), self._answer_at, conn, req, headers, key, when)
        else:
            self._answer_now(conn, req, headers, key)

    def _answer_now(self, conn, req, headers, key):
        "The plain chat answer (or its refusal) of `_request`, written now; then the connection's next request."
        self.inflight -= 1
        try:
            why = self._refusal(req, headers)
            if why:
                data = self._frame(why[0], json.dumps(why[1]).encode())
            else:
                text = self._text(req, headers)
                self.completions[key] += 1
                data = self._answer_bytes(req, text)
        except BaseException:  # a `reply` that raised: the connection ends, as a crashed handler's did
            conn.close()
            raise
        conn.write(data)
        conn.done()

    async def _serve(self, conn, method: str, path: str, headers: dict, body):
        "Everything but a plain chat answer, as a task: the routes, the probe, faults, slots (`body`: parsed for chat)."
        end = False
        try:
            route = path.split("?")[0]
            if method == "GET" and await self._info(route, conn, query=path[len(route) + 1 :]):
                pass
            elif method != "POST" or not route.endswith("/chat/completions"):
                await self._batch_api(method, path, body, headers, conn)
            else:
                req = body if isinstance(body, dict) else json.loads(body)
                if "x-scibench-probe" in headers:
                    await self._probe(req, conn)
                else:
                    end = await self._queued_chat(req, conn, headers)
        except (ConnectionError, asyncio.CancelledError):
            end = True
        except BaseException:
            conn.close()
            raise
        if end:
            conn.close()
        else:
            conn.done()

    async def _info(self, path: str, writer, query: str = "") -> bool:
        "The GET routes that are not the Batch API: `/stats`, `/props` (with `slots`), `/models`; True when answered."
        if path.endswith("/stats"):  # for a client in another process
            await self._send(writer, 200, self.stats(delays="delays=1" in query.split("&")))
        elif path == "/props" and self.structured == "llama":  # llama.cpp's server properties, as it gives them
            settings = {"n_ctx": 8192, "params": {"temperature": 0.8}}
            props = {"default_generation_settings": settings, "total_slots": self.slots or 1, "build_info": "b0-fake"}
            await self._send(writer, 200, {**props, "model_path": "fake.gguf", "chat_template": "{{ messages }}"})
        elif path == "/props" and self.slots:  # llama.cpp's server properties
            await self._send(writer, 200, {"total_slots": self.slots, "model_alias": "fake"})
        elif path.endswith("/models"):
            m = {"id": "fake", "object": "model"}
            if self.structured == "llama":
                m.update(owned_by="llamacpp", meta={"n_ctx_train": 8192})
            await self._send(writer, 200, {"object": "list", "data": [m]})
        else:
            return False
        return True

    async def _queued_chat(self, req, writer, headers) -> bool:
        "One chat request, counted in flight, waiting for one of the server's `slots` when it has a number of them."
        self.inflight += 1
        self.peak_inflight = max(self.peak_inflight, self.inflight)
        try:
            if not self.slots:
                return await self._chat(req, writer, headers)
            self._slot_sem = self._slot_sem or asyncio.Semaphore(self.slots)
            async with self._slot_sem:  # queued at the server beyond its slots
                return await self._chat(req, writer, headers)
        finally:
            self.inflight -= 1

    def _refusal(self, req, headers) -> tuple | None:
        """The permanent (400) and unauthorized (401) answers, for requests that name their marker, and the 400 for a
        response_format this server refuses → (status, body), or None."""
        if self._format(req)[0] == "refuse":
            return 400, {"error": {"message": "response_format is not supported"}}
        if self.permanent is None and self.unauthorized is None:
            return None
        said = json.dumps(req["messages"])
        if self.permanent and self.permanent in said:
            return 400, {"error": {"message": "permanent fault", "type": "invalid_request_error"}}
        if self.unauthorized is not None and self.unauthorized in said:
            auth = (headers or {}).get("authorization", "")
            return 401, {"error": {"message": f"Incorrect API key provided: {auth}", "type": "invalid_request_error"}}
        return None

    async def _refuse(self, req, writer, headers) -> bool:
        "Send `_refusal`'s answer, if any; True when sent."
        why = self._refusal(req, headers)
        if why:
            await self._send(writer, *why)
        return why is not None

    async def _fault(self, fault: str, req, writer) -> bool:
        "Inject `fault` as the answer to `req`; True when the connection must end."
        if fault == "429":
            await self._send(writer, 429, {"error": {"message": "rate limited"}}, {"retry-after-ms": "20"})
            return False
        if fault == "500":
            await self._send(writer, 500, {"error": {"message": "server error"}}, {"retry-after-ms": "20"})
            return False
        if fault == "timeout":
            await asyncio.sleep(self.hang)
            return True
        if fault == "reset":
            writer.transport.abort()
            return True
        if fault == "html":
            page = (
                b"<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head>"
                b"<body><h1>Maintenance</h1></body></html>"
            )
            await self._send_raw(writer, 200, page, {}, "text/html; charset=utf-8")
            return False
        if fault == "array":
            await self._send_raw(writer, 200, b"[]", {})
            return False
        if fault == "nochoices":
            await self._send(writer, 200, {"id": "x"})
            return False
        if fault == "badjson":  # a whole completion cut off halfway (with a matching content-length)
            data = json.dumps(self._completion(req, "an answer that never arrives whole")).encode()
            await self._send_raw(writer, 200, data[: len(data) // 2], {})
            return False
        raise ValueError(f"unknown fault {fault!r}")

    def _key(self, req) -> str:
        "The request's hash: its messages and seed (the fault plan, the latency draw and the counts are keyed by it)."
        return hashlib.sha256(
            json.dumps(req["messages"], sort_keys=True).encode() + str(req.get("seed")).encode()
        ).hexdigest()

    def _delay_of(self, req, key: str) -> float:
        "Seconds before answering: `delay(key)` plus the `slow` extras of the prompt."
        delay = self.delay(key)
        if self.slow:
            text = "\n".join(m["content"] for m in req["messages"] if isinstance(m.get("content"), str))
            delay += sum(v for k, v in self.slow.items() if k in text)
        self.delays.append(delay)
        return delay

    def _text(self, req, headers) -> str:
        "The answer's text (with the Authorization header quoted for an `echo_auth` prompt)."
        text = self._answer(req)
        if self.echo_auth is not None and self.echo_auth in json.dumps(req["messages"]):
            text += f" (you sent Authorization: {(headers or {}).get('authorization', '')})"
        return text

    async def _chat(self, req, writer, headers=None) -> bool:
        "Answer one chat request (or inject its fault); True when the connection must end."
        key = self._key(req)
        n = self.attempts[key]
        self.attempts[key] += 1
        delay = self._delay_of(req, key)
        if delay:
            await asyncio.sleep(delay)
        if await self._refuse(req, writer, headers):
            return False
        plan = self._plan(key)
        fault = plan[n] if n < len(plan) else None
        if fault:
            self.injected[fault] += 1
            return await self._fault(fault, req, writer)
        text = self._text(req, headers)
        self.completions[key] += 1
        await self._send(writer, 200, self._completion(req, text))
        return False

    # -- Batch API ---------------------------------------------------------
    async def _batch_api(self, method, path, body, headers, writer):
        "Files and batches: upload, create, read, cancel, download."
        parts = path.split("?")[0].strip("/").split("/")
        parts = parts[parts.index("v1") + 1 :] if "v1" in parts else parts
        nf = lambda what: self._send(
            writer, 404, {"error": {"message": f"No such {what}: {parts[-1]}", "type": "invalid_request_error"}}
        )
        if method == "POST" and parts == ["files"]:
            form = self._multipart(headers.get("content-type", ""), body)
            fid = "file-" + os.urandom(8).hex()
            self.files[fid] = form.get("file", b"")
            return await self._send(writer, 200, self._file_obj(fid, form.get("purpose", b"batch").decode()))
        if parts[:1] == ["batches"]:
            return await self._batches_api(method, path, parts, body, writer, nf)
        if method == "GET" and parts[:1] == ["files"] and len(parts) >= 2:
            if parts[1] not in self.files:
                return await nf("file")
            if parts[2:] == ["content"]:
                return await self._send_raw(writer, 200, self.files[parts[1]], {}, "application/octet-stream")
            return await self._send(writer, 200, self._file_obj(parts[1], "batch"))
        await self._send(writer, 404, {"error": {"message": f"unknown route {method} {path}"}})

    async def _batches_api(self, method, path, parts, body, writer, nf):
        "Batches: create (maybe dropping or delaying the answer), list, read, cancel."
        if method == "POST" and parts == ["batches"]:
            req = json.loads(body)
            if req.get("input_file_id") not in self.files:
                return await nf("file")
            b = self._create_batch(req)
            if self.batch_create_hang:
                await asyncio.sleep(self.batch_create_hang)
            if self.batches_created <= self.batch_create_drop:  # created, but the answer never arrives
                writer.transport.abort()
                return
            return await self._send(writer, 200, b)
        if method == "GET" and parts == ["batches"]:
            return await self._send(writer, 200, self._list_batches(path))
        b = self.batches.get(parts[1]) if len(parts) >= 2 else None
        if b is None:
            return await nf("batch")
        if method == "GET" and len(parts) == 2:
            self.batch_polls += 1
            self._advance(parts[1])
            return await self._send(writer, 200, b)
        if method == "POST" and parts[2:] == ["cancel"]:
            if b["status"] in ("validating", "in_progress"):
                b.update(status="cancelled", cancelled_at=int(time.time()))
            return await self._send(writer, 200, b)
        await self._send(writer, 404, {"error": {"message": f"unknown route {method} {path}"}})

    def _list_batches(self, path: str) -> dict:
        "A page of `GET /batches?limit=&after=`: newest first, as OpenAI lists them."
        from urllib.parse import parse_qs, urlsplit

        self.batch_lists += 1
        q = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
        ids = list(reversed(self.batches))
        if q.get("after") in self.batches:
            ids = ids[ids.index(q["after"]) + 1 :]
        page = ids[: int(q.get("limit") or 20)]
        data = [self.batches[i] for i in page]
        return dict(
            object="list",
            data=data,
            first_id=page[0] if page else None,
            last_id=page[-1] if page else None,
            has_more=len(ids) > len(page),
        )

    @staticmethod
    def _multipart(ctype: str, body: bytes) -> dict:
        "The fields of a multipart/form-data body (name → bytes)."
        m = re.search(r'boundary="?([^";]+)"?', ctype)
        out = {}
        for part in body.split(b"--" + m.group(1).encode()) if m else []:
            if b"\r\n\r\n" not in part:
                continue
            head, data = part.split(b"\r\n\r\n", 1)
            name = re.search(rb'name="([^"]*)"', head)
            if name:
                out[name.group(1).decode()] = data[:-2] if data.endswith(b"\r\n") else data
        return out

    def _file_obj(self, fid, purpose) -> dict:
        return {
            "id": fid,
            "object": "file",
            "bytes": len(self.files[fid]),
            "created_at": int(time.time()),
            "filename": f"{fid}.jsonl",
            "purpose": purpose,
            "status": "processed",
        }

    def _create_batch(self, req) -> dict:
        bid, now = "batch_" + os.urandom(8).hex(), time.time()
        lines, errors, seen = [], [], set()
        for n, ln in enumerate(self.files[req["input_file_id"]].splitlines(), 1):
            if not ln.strip():
                continue
            try:
                d = json.loads(ln)
                cid = d["custom_id"]
                d["body"]["messages"]
            except (ValueError, KeyError, TypeError):
                errors.append({"code": "invalid_json_line", "message": "not a request line", "line": n})
                continue
            if cid in seen:
                errors.append({"code": "duplicate_custom_id", "message": f"custom_id {cid} appears twice", "line": n})
            seen.add(cid)
            lines.append(d)
            if self.batch_reject is not None and self.batch_reject in json.dumps(d["body"]["messages"]):
                errors.append(
                    {"code": "token_limit_exceeded", "message": "Enqueued token limit reached for fake.", "line": None}
                )
        b = {
            "id": bid,
            "object": "batch",
            "endpoint": req.get("endpoint"),
            "input_file_id": req["input_file_id"],
            "completion_window": req.get("completion_window", "24h"),
            "status": "validating",
            "created_at": int(now),
            "expires_at": int(now) + 86400,
            "output_file_id": None,
            "error_file_id": None,
            "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": req.get("metadata"),
        }
        if errors or req.get("endpoint") != "/v1/chat/completions":
            errors = errors or [
                {"code": "invalid_endpoint", "message": f"endpoint {req.get('endpoint')} is not served", "line": None}
            ]
            b.update(status="failed", failed_at=int(now), errors={"object": "list", "data": errors})
        self.batches[bid] = b
        self._batch_input[bid] = (now, lines)
        self.batches_created += 1
        return b

    def _advance(self, bid):
        """Move a batch along its lifecycle by the time passed, one step per poll (validating → in_progress → done, as a
        provider's batch goes however late it is polled); on completion write its output and error files."""
        b = self.batches[bid]
        t0, lines = self._batch_input[bid]
        if b["status"] not in ("validating", "in_progress"):
            return
        age = time.time() - t0
        if age < 0.3 * self.batch_delay:
            return
        if age < self.batch_delay or b["status"] == "validating":  # one step per poll: a slow poller still sees it run
            b.update(status="in_progress", in_progress_at=b.get("in_progress_at") or int(time.time()))
            return
        has = lambda sub, d: sub is not None and sub in json.dumps(d["body"]["messages"])
        out, err, expired = [], [], False
        for d in lines:
            cid, body, rid = d["custom_id"], d["body"], "batch_req_" + os.urandom(6).hex()
            if has(self.batch_missing, d):
                continue
            if has(self.batch_expire, d):
                expired = True
                err.append(
                    {
                        "id": rid,
                        "custom_id": cid,
                        "response": None,
                        "error": {
                            "code": "batch_expired",
                            "message": "This request could not be executed before the completion window expired.",
                        },
                    }
                )
                continue
            self.batch_lines[cid] += 1
            if has(self.permanent, d):
                code, obj = 400, {"error": {"message": "permanent fault", "type": "invalid_request_error"}}
            elif has(self.batch_error, d):
                code, obj = 500, {"error": {"message": "server error", "type": "server_error"}}
            else:
                code, obj = 200, self._completion(body, self._answer(body))
            (out if code == 200 else err).append(
                {
                    "id": rid,
                    "custom_id": cid,
                    "response": {"status_code": code, "request_id": rid, "body": obj},
                    "error": None,
                }
            )
        for kind, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = "file-" + os.urandom(8).hex()
                self.files[fid] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                b[kind] = fid
        now = int(time.time())
        b.update(
            status="expired" if expired else "completed",
            **({"expired_at": now} if expired else {"completed_at": now}),
            request_counts={"total": len(lines), "completed": len(out), "failed": len(err)},
        )

    def _completion(self, req, text) -> dict:
        words = [w for m in req["messages"] for w in str(m.get("content", "")).split()]
        pt, ct = len(words), len(text.split())
        usage = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
        if self.prefix_cache:
            h, cached, hit = hashlib.sha1(), 0, True
            for i in range(0, pt - pt % self.BLOCK, self.BLOCK):
                h.update(" ".join(words[i : i + self.BLOCK]).encode())
                d = h.hexdigest()
                if hit and d in self._blocks:
                    cached += self.BLOCK
                else:
                    hit = False
                    self._blocks.add(d)
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": usage,
        }

    def _answer_bytes(self, req, text: str) -> bytes:
        """The HTTP answer holding `_completion(req, text)`; without `prefix_cache`, equal answers (the same second,
        model, text and prompt words) are encoded once."""
        model = req.get("model", "fake")
        if self.prefix_cache or not isinstance(model, str):
            return self._frame(200, json.dumps(self._completion(req, text)).encode())
        k = (int(time.time()), model, text, sum(len(str(m.get("content", "")).split()) for m in req["messages"]))
        data = self._encoded.get(k)
        if data is None:
            d = self._completion(req, text)
            data = self._frame(200, json.dumps(d).encode())
            if d["created"] == k[0]:
                if len(self._encoded) >= 1024:
                    self._encoded.clear()
                self._encoded[k] = data
        return data

    @staticmethod
    def _frame(status: int, data: bytes, extra: dict | None = None, ctype: str = "application/json") -> bytes:
        "An HTTP/1.1 answer: status line, content type and length, `extra` headers, `data`."
        head = f"HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {len(data)}\r\n"
        if extra:
            head += "".join(f"{k}: {v}\r\n" for k, v in extra.items())
        return (head + "\r\n").encode() + data

    async def _send(self, writer, status, obj, extra=None):
        await self._send_raw(writer, status, json.dumps(obj).encode(), extra or {})

    async def _send_raw(self, writer, status, data: bytes, extra: dict, ctype="application/json"):
        writer.write(self._frame(status, data, extra, ctype))
        await writer.drain()

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> "FakeServer":
        def run():
            from scibench.llm import loop_factory  # uvloop where installed: less server CPU (P1 measures the client)

            self._loop = (loop_factory() or asyncio.new_event_loop)()
            make = self._loop.create_server(lambda: _Conn(self), "127.0.0.1", 0, backlog=1024)
            srv = self._loop.run_until_complete(make)
            self.port = srv.sockets[0].getsockname()[1]
            self._srv = srv
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self):
        if not self._loop:
            return

        async def shutdown():
            self._srv.close()
            for c in list(self._conns):
                c.transport.abort()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()


class _Conn(asyncio.Protocol):
    """One client connection of a `FakeServer`: its requests parsed from the bytes as they come (the head split at
    once, the body by its content-length) and answered one at a time, in order, as HTTP/1.1 keep-alive does. It is
    also the `writer` the handlers write to (`write`, `drain`, `transport`, `close`), as asyncio's StreamWriter was."""

    def __init__(self, fs: FakeServer):
        self.fs, self.buf, self.busy, self.transport = fs, bytearray(), False, None

    def connection_made(self, transport):
        self.transport = transport
        self.fs._conns.add(self)

    def connection_lost(self, exc):
        self.fs._conns.discard(self)

    def data_received(self, data: bytes):
        self.buf += data
        if not self.busy:
            self.next()

    def write(self, data: bytes):
        if not self.transport.is_closing():
            self.transport.write(data)

    async def drain(self):
        "Nothing to wait for: the transport buffers what the socket does not take at once."

    def close(self):
        self.transport.close()

    def done(self):
        "The answer is written: on to the next request already received, if any."
        self.busy = False
        if self.buf and not self.transport.is_closing():
            self.next()

    def next(self):
        "Hand the next whole request in the buffer to the server (a malformed one closes the connection)."
        buf = self.buf
        end, sep = buf.find(b"\r\n\r\n"), 4
        if end < 0:
            end, sep = buf.find(b"\n\n"), 2
            if end < 0:
                return
        lines = bytes(buf[:end]).decode("utf-8", "replace").split("\r\n" if sep == 4 else "\n")
        headers = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        try:
            method, path, _ = lines[0].split(" ", 2)
            start = end + sep
            stop = start + int(headers.get("content-length", 0))
        except ValueError:
            return self.transport.close()
        if len(buf) < stop:
            return
        body = bytes(buf[start:stop])
        del buf[:stop]
        self.busy = True
        try:
            self.fs._request(self, method, path, headers, body)
        except ValueError:  # a chat body that is not JSON: the connection ends, as a crashed handler ended it
            self.transport.close()


def _instance(s, root=None):
    "A small instance of JSON schema `s` (the first enum value, the middle of a range, a short string)."
    root = s if root is None else root
    if not isinstance(s, dict):
        return None
    if "$ref" in s:  # "#/$defs/Name"
        target = root
        for part in s["$ref"].lstrip("#/").split("/"):
            target = target.get(part, {}) if part else target
        return _instance(target, root)
    if "enum" in s or "const" in s:
        return s["enum"][0] if "enum" in s else s["const"]
    if "anyOf" in s or "oneOf" in s:
        return _instance((s.get("anyOf") or s.get("oneOf"))[0], root)
    t = s.get("type", "object" if "properties" in s else "string")
    t = t[0] if isinstance(t, list) else t
    if t == "object":
        return {k: _instance(v, root) for k, v in s.get("properties", {}).items()}
    if t == "array":
        return [_instance(s.get("items", {}), root) for _ in range(max(1, s.get("minItems", 1)))]
    if t in ("integer", "number"):
        lo = s.get("minimum", 1)
        return (lo + s.get("maximum", lo + 4)) // 2
    return {"boolean": True, "null": None}.get(t, "fine" * max(1, -(-s.get("minLength", 0) // 4)))


def serve_forever(port_file=None, **kw):
    """Run a FakeServer in this process until killed (for tests that kill clients); writes its port to `port_file`.
    `reply` may be a `"module:function"` name (a function cannot cross into a child process)."""
    if isinstance(kw.get("reply"), str):
        mod, fn = kw["reply"].split(":")
        kw["reply"] = getattr(importlib.import_module(mod), fn)
    s = FakeServer(**kw).start()
    if port_file:
        open(port_file, "w").write(str(s.port))
    while True:
        time.sleep(3600)
