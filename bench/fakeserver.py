"""A fake OpenAI-compatible server on 127.0.0.1 (aiohttp.web in a background thread) for fault injection and speed
tests: never a substitute for the end-to-end test with the real embedded model."""

from __future__ import annotations
import asyncio, collections, hashlib, importlib, json, math, os, re, statistics, threading, time
from aiohttp import web
from fastcore.basics import store_attr

__all__ = ['FakeServer', 'serve_forever']


HTML_PAGE = (b"<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head>"
             b"<body><h1>Maintenance</h1></body></html>")
BAD_BODIES = {"html": (HTML_PAGE, "text/html; charset=utf-8"), "array": (b"[]", "application/json"),
              "nochoices": (b'{"id": "x"}', "application/json")}  # HTTP 200 bodies that are not chat completions


def _error(status: int, message: str, kind: str | None = None, headers: dict | None = None) -> web.Response:
    "An OpenAI-style JSON error answer."
    err = {"message": message, **({"type": kind} if kind else {})}
    return web.json_response({"error": err}, status=status, headers=headers)


def _drop(request) -> web.Response:
    "End the connection without an answer (the returned response is never written)."
    if request.transport is not None:
        request.transport.abort()
    return web.Response()


async def _sleep_until(when: float):
    "Sleep until `when` (perf_counter), never before: a loop's timers run on whole milliseconds and may fire one early."
    while (left := when - time.perf_counter()) > 0:
        await asyncio.sleep(max(left, 0.001))


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
    (a careless server); `reply`: function(body dict) → answer text, or a dict sent as the whole HTTP 200 body (odd
    shapes; default echoes a score); `prefix_cache`: report `usage.prompt_tokens_details.cached_tokens` as a provider's
    prefix cache would (prompt words in leading blocks of `BLOCK` words already seen in an earlier prompt).

    Batch API: `batch_delay`: seconds from a batch's creation to its completion; `batch_expire`, `batch_error`,
    `batch_missing`: substrings of a prompt whose line expires unanswered, gets HTTP 500, or is left out;
    `batch_reject`: a substring of a prompt that makes its whole batch fail validation; `batch_create_drop`: the first
    this many batch creations create the batch but drop the connection before answering; `batch_create_hang`: seconds
    to wait after creating a batch before answering (a client killed meanwhile never learns its id). `GET /batches`
    lists batches newest first (`limit`, `after`), as OpenAI's API does.

    A careless or small server: `echo_auth`: a substring of a prompt whose HTTP 200 answer quotes the Authorization
    header; `slots`: chat requests handled at once (the rest wait in the server's queue, as llama.cpp's do; `GET /props`
    says `total_slots`, as llama.cpp's does).

    Structured output: `structured` is what the server does with a `response_format`: None follows OpenAI's json_schema
    form (the OpenAI-compatible standard) and ignores the others, and all of them when it has a `reply` (its text is
    the answer); "json_schema" follows OpenAI's json_schema form and refuses others (HTTP 400); "llama" is llama.cpp's
    server (`GET /props` with its settings, `/models` owned by llamacpp, follows its json_object+schema form and
    json_schema); "reject" refuses any (HTTP 400). A followed format's answer is an instance of its schema (what a
    grammar forces). The client's preflight requests (header `X-Scibench-Probe`) are answered at once, outside the
    counts, faults and latencies: the tests count the benchmark's requests.

    `reasoning`: as OpenAI's API for its reasoning models, a request (probes included) to an `o*`/`gpt-5*` model id that
    carries `max_tokens` gets HTTP 400 "Unsupported parameter" (their field is `max_completion_tokens`)."""

    BLOCK = 16
    FAULTS = ("429", "500", "timeout", "reset", "html", "array", "nochoices", "badjson")

    def __init__(self, latency=0.0, fault_rate=0.0, faults=("429", "500", "timeout", "reset"), max_faults=2,
                 permanent=None, reply=None, hang=30.0, unauthorized=None, prefix_cache=False, batch_delay=0.2,
                 batch_expire=None, batch_error=None, batch_missing=None, batch_reject=None, latency_dist=None,
                 slow=None, echo_auth=None, slots=None, batch_create_drop=0, batch_create_hang=0.0, structured=None,
                 reasoning=False):
        "What the server does, each option as its docstring says (live attributes: a test may change one meanwhile)."
        store_attr()
        if structured not in (None, "json_schema", "llama", "reject"):
            raise ValueError(f"structured must be None, 'json_schema', 'llama' or 'reject', got {structured!r}")
        bad = set(faults) - set(self.FAULTS)
        if bad:
            raise ValueError(f"unknown fault kind(s) {sorted(bad)}; kinds: {', '.join(self.FAULTS)}")
        if latency_dist is not None:
            kind, *args = latency_dist
            if kind != "lognormal" or len(args) != 2 or args[0] <= 0 or args[1] < 0:
                raise ValueError(f"latency_dist must be ('lognormal', median_s > 0, sigma >= 0), not {latency_dist!r}")
        self.faults, self.slow = tuple(faults), dict(slow or {})
        self.latency_dist = tuple(latency_dist) if latency_dist is not None else None
        self.attempts, self.completions = collections.Counter(), collections.Counter()
        self.injected = collections.Counter()  # faults injected, by kind
        self.headers_seen: list = []  # every request's headers (lower-case names), in arrival order
        self.inflight = self.peak_inflight = 0  # chat requests being handled at once
        self.delays: list = []  # each chat attempt's seconds before its answer, in arrival order
        self.files, self.batches, self.batch_lines = {}, {}, collections.Counter()
        self.batches_created = self.batch_polls = self.batch_lists = 0
        self.port, self._loop, self._runner, self._slots = None, None, None, None
        self._blocks: set = set()  # hashes of prompt prefixes seen, per block of words
        self._encoded: dict = {}  # (second, model, text, prompt words) → the body of a plain completion
        self._batch_input: dict = {}  # batch id → (creation time, its request lines)

    # -- what it answers ---------------------------------------------------
    def key(self, req: dict) -> str:
        "The request's hash: its messages and seed (the fault plan, the latency draw and the counts are keyed by it)."
        said = json.dumps(req["messages"], sort_keys=True).encode() + str(req.get("seed")).encode()
        return hashlib.sha256(said).hexdigest()

    def _plan(self, key: str) -> list:
        "The faults the request with hash `key` meets before its answer (none for most)."
        h = int(key[:16], 16)
        if (h % 10_000) / 10_000 >= self.fault_rate:
            return []
        return [self.faults[(h >> (24 + 4 * i)) % len(self.faults)] for i in range(1 + (h >> 20) % self.max_faults)]

    def delay(self, key: str) -> float:
        """Seconds before answering the request with hash `key` (hex): `latency`, or a draw from `latency_dist` fixed by
        the hash."""
        if self.latency_dist is None:
            return self.latency
        _, median, sigma = self.latency_dist
        u = (int(key[16:32], 16) + 0.5) / 16**16  # bits the fault plan does not use
        return median * math.exp(sigma * statistics.NormalDist().inv_cdf(u))

    def _delay_of(self, req, key: str) -> float:
        "Seconds before answering: `delay(key)` plus the `slow` extras of the prompt."
        delay = self.delay(key)
        if self.slow:
            text = "\n".join(m["content"] for m in req["messages"] if isinstance(m.get("content"), str))
            delay += sum(v for k, v in self.slow.items() if k in text)
        self.delays.append(delay)
        return delay

    def _format(self, body: dict) -> tuple:
        "What this server does with the request's response_format → (follow | refuse | ignore, its schema)."
        rf = body.get("response_format")
        kind = rf.get("type") if isinstance(rf, dict) else None
        if kind is None or (self.structured is None and (kind != "json_schema" or self.reply)):
            return "ignore", None
        schema = rf.get("json_schema", {}).get("schema") if kind == "json_schema" else rf.get("schema")
        ok = {None: ("json_schema",), "json_schema": ("json_schema",), "llama": ("json_schema", "json_object")}.get(
            self.structured, ())
        return ("follow", schema or {}) if kind in ok else ("refuse", None)

    def _answer(self, body: dict, auth: str | None = None):
        "The answer's text (a schema's instance, `reply`'s, or a score), the Authorization quoted for `echo_auth`."
        verdict, schema = self._format(body)
        if verdict == "follow":  # a grammar forces an instance of the schema
            return json.dumps(_instance(schema))
        score = 1 + len(body["messages"][-1]["content"]) % 5
        text = self.reply(body) if self.reply else f"Rationale: fine. Therefore, the score is: {score}"
        echo = None not in (auth, self.echo_auth) and self.echo_auth in json.dumps(body["messages"])
        if echo and isinstance(text, str):
            text += f" (you sent Authorization: {auth})"
        return text

    def _refusal(self, req, auth: str) -> web.Response | None:
        "The 400 of a refused response_format or a `permanent` prompt, the 401 of an `unauthorized` one, or None."
        if self._format(req)[0] == "refuse":
            return _error(400, "response_format is not supported")
        if self.permanent is None and self.unauthorized is None:
            return None
        said = json.dumps(req["messages"])
        if self.permanent and self.permanent in said:
            return _error(400, "permanent fault", "invalid_request_error")
        if self.unauthorized is not None and self.unauthorized in said:
            return _error(401, f"Incorrect API key provided: {auth}", "invalid_request_error")
        return None

    def _completion(self, req, text) -> dict:
        "A chat completion of `text`, its usage counted in words (and prefix-cached words with `prefix_cache`)."
        words = [w for m in req["messages"] for w in str(m.get("content", "")).split()]
        pt, ct = len(words), len(text.split())
        usage = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
        if self.prefix_cache:
            h, cached, hit = hashlib.sha1(), 0, True
            for i in range(0, pt - pt % self.BLOCK, self.BLOCK):
                h.update(" ".join(words[i : i + self.BLOCK]).encode())
                hit = hit and h.hexdigest() in self._blocks
                cached += self.BLOCK if hit else 0
                self._blocks.add(h.hexdigest())
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": req.get("model", "fake"), "choices": [choice], "usage": usage}

    def _completion_response(self, req, text: str) -> web.Response:
        """`_completion(req, text)` as an answer; without `prefix_cache`, equal ones (the same second, model, text and
        number of prompt words) are encoded once (less server CPU: P1 measures the client)."""
        model = req.get("model", "fake")
        if self.prefix_cache or not isinstance(model, str):
            return web.json_response(self._completion(req, text))
        k = (int(time.time()), model, text, sum(len(str(m.get("content", "")).split()) for m in req["messages"]))
        if k not in self._encoded:
            if len(self._encoded) >= 1024:
                self._encoded.clear()
            d = self._completion(req, text)
            self._encoded[k] = json.dumps(d).encode() if d["created"] == k[0] else None
        data = self._encoded[k] or json.dumps(self._completion(req, text)).encode()
        return web.Response(body=data, content_type="application/json")

    @property
    def calls(self) -> int:
        return sum(self.attempts.values())

    def stats(self, delays: bool = False) -> dict:
        """Counts a client in another process can read (`GET /v1/stats`): attempts, completions, peak chat requests in
        flight; `delays` (`GET /v1/stats?delays=1`): each chat attempt's delay in arrival order, too."""
        return dict(calls=self.calls, completions=sum(self.completions.values()), peak_inflight=self.peak_inflight,
                    batches_created=self.batches_created, attempts_timed=len(self.delays),
                    **(dict(delays=self.delays) if delays else {}))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- chat ----------------------------------------------------------------
    async def _chat_route(self, request) -> web.Response:
        "A chat request: the probe at once; otherwise counted in flight, queued for one of `slots` if it has a number."
        try:
            req = json.loads(await request.read())
        except ValueError:  # a body that is not JSON: the connection ends, as a crashed handler ended it
            return _drop(request)
        if self.reasoning and "max_tokens" in req and re.match(r"(?:.*/)?(?:o\d|gpt-5)", str(req.get("model")), re.I):
            return _error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                          "'max_completion_tokens' instead.", "invalid_request_error")
        if "x-scibench-probe" in request.headers:  # answered as this server would: a JSON start, 400 or text
            verdict = self._format(req)[0]
            return _error(400, "response_format is not supported") if verdict == "refuse" else web.json_response(
                self._completion(req, "{" if verdict == "follow" else "Hello"))
        self.inflight += 1
        self.peak_inflight = max(self.peak_inflight, self.inflight)
        try:
            if not self.slots:
                return await self._chat(req, request)
            self._slots = self._slots or asyncio.Semaphore(self.slots)
            async with self._slots:  # queued at the server beyond its slots
                return await self._chat(req, request)
        finally:
            self.inflight -= 1

    async def _chat(self, req, request) -> web.Response:
        "Answer one chat request after its delay: a refusal, its planned fault for this attempt, or a completion."
        key, auth = self.key(req), request.headers.get("authorization", "")
        n = self.attempts[key]
        self.attempts[key] += 1
        await _sleep_until(time.perf_counter() + self._delay_of(req, key))
        refused = self._refusal(req, auth)
        if refused is not None:
            return refused
        plan = self._plan(key) if self.fault_rate else []
        if n < len(plan):
            self.injected[plan[n]] += 1
            return await self._fault(plan[n], req, request)
        text = self._answer(req, auth)  # a `reply` that raises ends the connection (the middleware)
        self.completions[key] += 1
        return web.json_response(text) if isinstance(text, dict) else self._completion_response(req, text)

    async def _fault(self, fault: str, req, request) -> web.Response:
        "The answer of an injected `fault`."
        if fault in ("429", "500"):
            why = "rate limited" if fault == "429" else "server error"
            return _error(int(fault), why, headers={"retry-after-ms": "20"})
        if fault == "timeout":
            await asyncio.sleep(self.hang)
            return _drop(request)
        if fault == "reset":
            return _drop(request)
        if fault == "badjson":  # a whole completion cut off halfway (with a matching content-length)
            data = json.dumps(self._completion(req, "an answer that never arrives whole")).encode()
            return web.Response(body=data[: len(data) // 2], content_type="application/json")
        data, ctype = BAD_BODIES[fault]
        return web.Response(body=data, headers={"Content-Type": ctype})

    # -- server information ----------------------------------------------------
    async def _stats(self, request) -> web.Response:
        return web.json_response(self.stats(delays=request.query.get("delays") == "1"))

    async def _props(self, request) -> web.Response:
        "llama.cpp's server properties, as it gives them (with `structured='llama'` or `slots`)."
        if self.structured == "llama":
            settings = {"n_ctx": 8192, "params": {"temperature": 0.8}}
            return web.json_response({"default_generation_settings": settings, "total_slots": self.slots or 1,
                                      "build_info": "b0-fake", "model_path": "fake.gguf",
                                      "chat_template": "{{ messages }}"})
        if self.slots:
            return web.json_response({"total_slots": self.slots, "model_alias": "fake"})
        return await self._unknown(request)

    async def _models(self, request) -> web.Response:
        m = {"id": "fake", "object": "model"}
        if self.structured == "llama":
            m.update(owned_by="llamacpp", meta={"n_ctx_train": 8192})
        return web.json_response({"object": "list", "data": [m]})

    async def _unknown(self, request) -> web.Response:
        return _error(404, f"unknown route {request.method} {request.path_qs}")

    # -- Batch API -------------------------------------------------------------
    async def _upload(self, request) -> web.Response:
        form = await request.post()
        fid = "file-" + os.urandom(8).hex()
        f = form.get("file")
        self.files[fid] = f.file.read() if hasattr(f, "file") else (f or "").encode()
        return web.json_response(self._file_obj(fid, form.get("purpose", "batch")))

    def _file_obj(self, fid, purpose) -> dict:
        return {"id": fid, "object": "file", "bytes": len(self.files[fid]), "created_at": int(time.time()),
                "filename": f"{fid}.jsonl", "purpose": purpose, "status": "processed"}

    async def _file(self, request) -> web.Response:
        "A file's object, or its content (`/files/{id}/content`)."
        fid = request.match_info["id"]
        if fid not in self.files:
            return _error(404, f"No such file: {fid}", "invalid_request_error")
        if request.path.endswith("/content"):
            return web.Response(body=self.files[fid], content_type="application/octet-stream")
        return web.json_response(self._file_obj(fid, "batch"))

    def _validate(self, req) -> tuple:
        "The request lines of a batch's input file and what is wrong with them (as a provider's validation says)."
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
                errors.append({"code": "token_limit_exceeded", "message": "Enqueued token limit reached for fake.",
                               "line": None})
        if not errors and req.get("endpoint") != "/v1/chat/completions":
            why = f"endpoint {req.get('endpoint')} is not served"
            errors = [{"code": "invalid_endpoint", "message": why, "line": None}]
        return lines, errors

    async def _create(self, request) -> web.Response:
        "Create a batch (maybe dropping or delaying the answer)."
        req = await request.json()
        if req.get("input_file_id") not in self.files:
            return _error(404, f"No such file: {req.get('input_file_id')}", "invalid_request_error")
        (lines, errors), bid, now = self._validate(req), "batch_" + os.urandom(8).hex(), time.time()
        b = self.batches[bid] = {
            "id": bid, "object": "batch", "endpoint": req.get("endpoint"), "input_file_id": req["input_file_id"],
            "completion_window": req.get("completion_window", "24h"), "status": "validating", "created_at": int(now),
            "expires_at": int(now) + 86400, "output_file_id": None, "error_file_id": None, "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "metadata": req.get("metadata")}
        if errors:
            b.update(status="failed", failed_at=int(now), errors={"object": "list", "data": errors})
        self._batch_input[bid] = (now, lines)
        self.batches_created += 1
        if self.batch_create_hang:
            await asyncio.sleep(self.batch_create_hang)
        if self.batches_created <= self.batch_create_drop:  # created, but the answer never arrives
            return _drop(request)
        return web.json_response(b)

    async def _list(self, request) -> web.Response:
        "A page of `GET /batches?limit=&after=`: newest first, as OpenAI lists them."
        self.batch_lists += 1
        ids, q = list(reversed(self.batches)), request.query
        if q.get("after") in self.batches:
            ids = ids[ids.index(q["after"]) + 1 :]
        page = ids[: int(q.get("limit") or 20)]
        return web.json_response(dict(object="list", data=[self.batches[i] for i in page],
                                      first_id=page[0] if page else None, last_id=page[-1] if page else None,
                                      has_more=len(ids) > len(page)))

    async def _batch(self, request) -> web.Response:
        "Read a batch (moving it along its lifecycle) or cancel it (`POST .../cancel`)."
        bid = request.match_info["id"]
        b = self.batches.get(bid)
        if b is None:
            return _error(404, f"No such batch: {bid}", "invalid_request_error")
        if request.method == "POST":
            if b["status"] in ("validating", "in_progress"):
                b.update(status="cancelled", cancelled_at=int(time.time()))
        else:
            self.batch_polls += 1
            self._advance(bid)
        return web.json_response(b)

    def _advance(self, bid):
        """Move a batch along its lifecycle by the time passed, one step per poll (validating → in_progress → done, as
        a provider's batch goes however late it is polled); on completion write its output and error files."""
        b, (t0, lines) = self.batches[bid], self._batch_input[bid]
        age = time.time() - t0
        if b["status"] not in ("validating", "in_progress") or age < 0.3 * self.batch_delay:
            return
        if age < self.batch_delay or b["status"] == "validating":  # one step per poll: a slow poller still sees it run
            b.update(status="in_progress", in_progress_at=b.get("in_progress_at") or int(time.time()))
            return
        rows = [r for r in map(self._batch_row, lines) if r is not None]
        ok = [bool(r["response"] and r["response"]["status_code"] == 200) for r in rows]
        out, err = [r for r, y in zip(rows, ok) if y], [r for r, y in zip(rows, ok) if not y]
        for kind, part in (("output_file_id", out), ("error_file_id", err)):
            if part:
                fid = "file-" + os.urandom(8).hex()
                self.files[fid] = "".join(json.dumps(r) + "\n" for r in part).encode()
                b[kind] = fid
        expired = any(r["error"] for r in err)
        done = "expired" if expired else "completed"
        counts = {"total": len(lines), "completed": len(out), "failed": len(err)}
        b.update(status=done, **{f"{done}_at": int(time.time())}, request_counts=counts)

    def _batch_row(self, d) -> dict | None:
        "The output (or error) line of one batch request line; None for a `batch_missing` one."
        rid, said = "batch_req_" + os.urandom(6).hex(), json.dumps(d["body"]["messages"])
        has = lambda sub: sub is not None and sub in said
        if has(self.batch_missing):
            return None
        row = {"id": rid, "custom_id": d["custom_id"], "response": None, "error": None}
        if has(self.batch_expire):
            msg = "This request could not be executed before the completion window expired."
            return row | {"error": {"code": "batch_expired", "message": msg}}
        self.batch_lines[d["custom_id"]] += 1
        if has(self.permanent):
            code, obj = 400, {"error": {"message": "permanent fault", "type": "invalid_request_error"}}
        elif has(self.batch_error):
            code, obj = 500, {"error": {"message": "server error", "type": "server_error"}}
        else:
            code, obj = 200, self._completion(d["body"], self._answer(d["body"]))
        return row | {"response": {"status_code": code, "request_id": rid, "body": obj}}

    # -- lifecycle ---------------------------------------------------------------
    @web.middleware
    async def _seen(self, request, handler):
        "Every request's headers are kept; a handler that raises (a `reply` that did) ends its connection."
        self.headers_seen.append(request.headers)
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception:
            _drop(request)
            raise

    def _app(self) -> web.Application:
        "The routes: chat, stats, props and models (at any prefix, as servers mounted elsewhere), files and batches."
        app = web.Application(middlewares=[self._seen], client_max_size=1 << 30)
        app.router.add_post("/v1/chat/completions", self._chat_route)
        app.router.add_post("/{prefix:.*}/chat/completions", self._chat_route)
        app.router.add_get("/{prefix:.*}/stats", self._stats)
        app.router.add_get("/props", self._props)
        app.router.add_get("/{prefix:.*}/models", self._models)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}", self._file)
        app.router.add_get("/v1/files/{id}/content", self._file)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches", self._list)
        app.router.add_get("/v1/batches/{id}", self._batch)
        app.router.add_post("/v1/batches/{id}/cancel", self._batch)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    def start(self) -> "FakeServer":
        "Serve on a free port of 127.0.0.1 from a daemon thread with its own event loop (uvloop where installed)."
        ready = threading.Event()

        def run():
            try:
                import uvloop  # less server CPU (P1 measures the client)

                self._loop = uvloop.new_event_loop()
            except ImportError:
                self._loop = asyncio.new_event_loop()
            self._runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=0.1)
            self._loop.run_until_complete(self._runner.setup())
            self._loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024).start())
            self.port = self._runner.addresses[0][1]
            ready.set()
            self._loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(10)
        return self

    def stop(self):
        "Close the server and every connection; handlers still waiting (a hang) are cancelled."
        if not self._loop or self._loop.is_closed():
            return

        async def shutdown():
            await self._runner.cleanup()
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
