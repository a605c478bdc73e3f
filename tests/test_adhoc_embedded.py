"""Issue 21: a llama.cpp server under a name scibench has never seen evaluates on every benchmark with no
structured-output flag given.

The embedded server (llama-cpp-python's OpenAI-compatible server with SmolLM2-135M) is used as an *ad-hoc endpoint*:
models `mystery` (every model role) and `mystery2` (the judge) at its base URL, structured mode left at "auto". For
every benchmark and every stage it declares (`Benchmark.stages`), the first request a run sends in that stage is built
exactly as a run builds it (the benchmark's own `run` against the dry run's counting stubs, `scibench.run.stub_run`,
with the embedded model's models.toml `max_tokens` cap applied by `apply_caps` and the detected mode in the specs),
sent once through the LLM layer, and read with that stage's own result parser.

What is asserted, and why it is honest for a 135M model:
- detection: both names are detected as `llama` (no `--structured` given), and every request that carries a schema
  is sent with llama.cpp's `response_format` (the answer is marked `structured`);
- every stage whose requests carry a schema: the grammar forces a JSON object, so the stage's parser must read it
  (no failure). The one exception allowed is an answer cut at its `max_tokens` cap (finish_reason "length"): the
  grammar cannot close a JSON object the cap cuts; then the answer must still start as a JSON object (the grammar
  was applied) and the cut is reported (printed), not hidden;
- the free-text stages (abgen `generate`: a design in prose; arxivbench `query`: a list of papers; arxivbench
  `authors_judge`: the authors' one-token yes/no/pass) have no grammar: their parsers accept any text (a design is
  its text, an unknown verdict is the authors' `pass`), except `query`, whose links a 135M model may or may not write.
  For these the answer must be a non-empty text and the parser must not fail; `query` records how many papers it
  found (0 is allowed and printed).
"""
import dataclasses
import sys

import pytest

pytestmark = pytest.mark.slow

URL = "http://127.0.0.1:8765/v1"   # models.toml [models.local]: the embedded server's port (checked below)
MODEL, JUDGE = "mystery", "mystery2"

# benchmark → the parameter sets whose stub runs reach every stage it declares (arxivbench's relevance and match
# stages belong to its `paper`/`scibench` protocols, authors_judge to the default `authors`)
VARIANTS = {
    "abgen": [{}],
    "abgen_eval": [{}],
    "rubrics": [{}],
    "autobench": [{}],
    "arxivbench": [{}, {"protocol": "paper"}],
}


def _stage_names():
    from scibench.bench import get_benchmark
    return [(b, s.name) for b in VARIANTS for s in get_benchmark(b).stages]


def _model_available() -> str | None:
    "Why the embedded model cannot run here, or None."
    try:
        import llama_cpp.server  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"llama-cpp-python's server is not importable ({type(e).__name__}: {e})"
    from scibench.server import smollm2_path
    try:
        smollm2_path()
    except RuntimeError as e:
        return f"the SmolLM2 model file is not available: {e}"
    return None


def _params(b, extra: dict) -> dict:
    "Every model role of `b` on the ad-hoc names (the judge on the second), the sample split, one item."
    p = dict(split="sample", limit=1, **extra)
    for r in b.roles():
        p[r.name] = JUDGE if r.name == "judge" else MODEL
    return p


def _first_requests(bench: str, specs: dict, cap: int) -> tuple[dict, dict]:
    """{stage: (model name, Request, cfg)}: the first request of each stage a run of `bench` sends (its stub run),
    with the embedded model's cap applied as a run applies it; and the caps applied."""
    from scibench import run as R
    from scibench.bench import get_benchmark
    b = get_benchmark(bench)
    got, caps_seen = {}, {}
    orig = R.CountingLLM.answer

    async def answer(self, body, req):
        got.setdefault(req.stage, (self.spec.name, req, cur[0]))
        return await orig(self, body, req)

    cur = [None]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(R.CountingLLM, "answer", answer)
        for extra in VARIANTS[bench]:
            params = _params(b, extra)
            cfg = b.make_config(params)
            capped_specs = {n: dataclasses.replace(s, max_tokens=cap) for n, s in specs.items()}
            capped, caps = R.apply_caps(b, cfg, params, capped_specs)
            caps_seen.update(caps)
            cur[0] = cfg = b.make_config(capped)
            R.stub_run(b, cfg, {n: specs[n] for n in {x for v in R.role_models(b, cfg).values() for x in v}})
    return got, caps_seen


def _enum(schema: dict, key: str) -> list:
    return schema["properties"][key]["enum"]


def _parse(bench: str, stage: str, r: dict, req, cfg, spec) -> tuple[str | None, str]:
    """(failure or None, what was read) of answer `r` to `req` by the stage's own result parser."""
    from scibench.benchmarks.abgen import method as abgen
    from scibench.benchmarks.rubrics import agent
    from scibench.benchmarks.arxivbench import method as ab
    from scibench.benchmarks.autobench import method as au
    from scibench.benchmarks.rubrics import method as rubrics
    from scibench.judge import judge_result
    from scibench.llm import parse_json
    if not r["ok"]:
        return f"request failed: {r['error']}", ""
    if (bench, stage) == ("abgen", "generate"):
        s = {}
        abgen._generation(s, r, abgen.setup_of(cfg, spec))
        return s["failure"] or (None if s["design"] and s["design"].strip() else "empty design"), \
            f"design of {len(s['design'] or '')} chars"
    if stage == "judge" and bench in ("abgen", "abgen_eval"):
        j = abgen.setup_of(cfg, spec).result(r)
        return j["failure"], f"score {j['value']}"
    if bench == "rubrics":
        if "tool" in (req.schema or {}).get("properties", {}):
            act, why = agent._act_of(r["text"])
            return why, f"action {act and act['tool']}"
        if stage in ("grade", "judge_eval") and "answer" not in (req.schema or {}).get("properties", {}):
            # PaperBench's judge (JudgeEval's grader): its file ranking and its reasoning are prose
            return (None if r["text"].strip() else "empty answer"), f"{len(r['text'])} chars of prose"
        if stage in ("grade", "judge_eval"):
            j = judge_result(r, _enum(req.schema, "answer"))
            return j["failure"], f"verdict {j['value']}"
        p = rubrics.parse_rubric(r["text"])
        return p["failure"], f"{len(p['items'])} rubric items ({p['how']})"
    if bench == "autobench":
        if stage == "extract":
            obj, why = parse_json(r["text"])
            kps = obj.get("knowledge_points") if isinstance(obj, dict) else None
            return (None if isinstance(kps, list) else au._cut(why or "no 'knowledge_points' list", r)), \
                f"{len(kps or [])} knowledge points"
        if stage == "generate":
            obj, why = parse_json(r["text"])
            ok = isinstance(obj, dict) and isinstance(obj.get("question"), str)
            return (None if ok else au._cut(why or "no 'question'", r)), "a question" if ok else ""
        if stage in ("correctness", "calibrate", "evaluate"):
            v, _, fail = au.parse_answer(r["text"], _enum(req.schema, "answer"))
            return au._cut(fail, r), f"answer {v}"
        if stage == "grade":
            j = judge_result(r, au.GRADES)
            return j["failure"], f"grade {j['value']}"
        key = dict(answerability="paragraph_ids", ambiguity="correct_options")[stage]
        obj, why = parse_json(r["text"])
        v = obj.get(key) if isinstance(obj, dict) else None
        return (None if isinstance(v, list) else au._cut(why or f"no {key!r} list", r)), f"{key} {v}"
    if bench == "arxivbench":
        if stage == "query":
            papers = ab.extract_papers(r["text"])
            return (None if r["text"].strip() else "empty answer"), f"{len(papers)} papers listed"
        if stage == "authors_judge":
            v, fail = ab.authors_verdict(r)
            return fail, f"verdict {v}"
        j = judge_result(r, ab.RELEVANCE if stage == "relevance" else ab.MATCH)
        return j["failure"], f"{stage} {j['value']}"
    raise AssertionError(f"no parser known for {bench}/{stage}: add it to this test")


@pytest.fixture(scope="module")
def answers(request, tmp_path_factory):
    """{(bench, stage): result} of the first request of every stage, sent to the embedded server as ad-hoc models;
    plus the detected modes. The shared `local_server` fixture joins a running embedded server (a lease: its last
    user stops it) or starts one."""
    from scibench.llm import LLM, detect_structured, get_model, resolve_structured
    from scibench.server import _port
    why = _model_available()
    if why:
        pytest.skip(why)
    local_server = request.getfixturevalue("local_server")   # after the check: it would fail, not skip
    assert _port(local_server) == 8765 and local_server.base_url.rstrip("/") == URL, local_server.base_url
    out, modes = {}, {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCIBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))   # no cached answer is reused
        adhoc = {n: get_model(n, base_url=URL) for n in (MODEL, JUDGE)}
        assert {s.structured for s in adhoc.values()} == {"auto"} and not any(s.embedded for s in adhoc.values())
        specs = resolve_structured(adhoc)   # as a run does (`_launch`): "auto" asked of the server
        for n in adhoc:
            modes[n] = (specs[n].structured, detect_structured(adhoc[n])[1])
        cap = local_server.max_tokens
        llms = {n: LLM(s, progress=False) for n, s in specs.items()}
        for bench in VARIANTS:
            reqs, caps = _first_requests(bench, specs, cap)
            for stage, (name, req, cfg) in reqs.items():
                r = llms[name].map([req])[0]
                fail, read = _parse(bench, stage, r, req, cfg, specs[name])
                out[(bench, stage)] = dict(name=name, req=req, res=r, failure=fail, read=read, caps=caps)
                print(f"{bench}/{stage}: {name} max_tokens={req.max_tokens} schema={req.schema is not None} "
                      f"finish={r.get('finish_reason')} {r.get('seconds', 0):.1f}s → {read}"
                      + (f"; FAILURE: {fail}" if fail else ""), file=sys.stderr)
    return dict(results=out, modes=modes, cap=cap)


def test_detected_llama(answers):
    """No --structured given: both ad-hoc names on the embedded server are detected as llama.cpp's grammar. (The
    detection asks the server's `GET /props`, which the embedded server answers as llama.cpp's does.)"""
    for n, (mode, how) in answers["modes"].items():
        assert mode == "llama", (n, mode, how)


def test_every_stage_reached(answers):
    "Every stage every benchmark declares got a real request (the stage list is the benchmarks' own)."
    missing = [f"{b}/{s}" for b, s in _stage_names() if (b, s) not in answers["results"]]
    assert not missing, f"stages without a request in their stub runs: {missing}"


@pytest.mark.parametrize("bench,stage", _stage_names(), ids=lambda x: x)
def test_stage_answer_parses(answers, bench, stage):
    "The stage's first real request, answered by the embedded server in the detected mode, is read by its parser."
    got = answers["results"].get((bench, stage))
    if got is None:
        pytest.fail(f"{bench}/{stage}: no request (see test_every_stage_reached)")
    req, r = got["req"], got["res"]
    assert r["ok"], f"{bench}/{stage}: {r['error']}"
    assert req.max_tokens <= answers["cap"], (bench, stage, req.max_tokens)   # the embedded model's cap, applied
    if req.schema is None:
        assert not r.get("structured") and (r["text"] or "").strip(), (bench, stage, r)
        assert got["failure"] is None, f"{bench}/{stage}: {got['failure']} (answer {r['text'][:300]!r})"
        return
    assert r.get("structured"), f"{bench}/{stage}: sent without response_format in mode llama"
    if got["failure"] is not None and r.get("finish_reason") == "length":
        # the cap cut the grammar's object: honest, and shown; the grammar was applied (it starts a JSON object)
        assert r["text"].lstrip().startswith("{"), (bench, stage, r["text"][:300])
        print(f"{bench}/{stage}: cut at max_tokens={req.max_tokens}: {got['failure']}", file=sys.stderr)
        return
    assert got["failure"] is None, f"{bench}/{stage}: {got['failure']} (answer {r['text'][:300]!r})"
