"""AutoBench's speed figures for `make bench` — AB1 (a whole sample run through `scibench.run.execute` and its rerun
from the cache) and W4 (a whole run at paper scale, `bench.perf.whole_run`) — and the fake server's scripted
replies they, the tests and the AutoBench notebook use. Never used for results."""


from __future__ import annotations
import hashlib, json, os, random, re, tempfile, time
from pathlib import Path
from bench import bench_full
from scibench.core import write_json, write_jsonl, write_text
from bench.fakeserver import FakeServer
from scibench.retrieval import embed
from scibench.run import execute
from bench.perf import W1_CONCURRENCY, W1_LATENCY, WholeRun, whole_run
from scibench.benchmarks.autobench.method import content_words
from scibench.benchmarks.autobench.run import STUB_WORDS

__all__ = ['W4_SECTIONS', 'W4_WINDOWS', 'W4_SCRIPTED', 'W4_FAILURES_ARE', 'W4_PARAMS', 'PERF', 'scripted_reply', 'fake_registry',
           'perf_pipeline', 'w4_data', 'w4_reply', 'w4_setup', 'w4_failures', 'w4_autobench']

def _sents(t):
    return [s for s in re.split(r"(?<=[.!?])\s+", t) if s]  # as autobench splits sentences


def _ovl(a, b):
    A = content_words(a)
    return len(A & content_words(b)) / max(1, len(A))


def _scripted_points(p: str, ids: list) -> str:
    "The extraction answer: a factual, a conceptual and a reasoning point from the window's sentences."
    passage = p.split("Other sections")[0]
    win = re.findall(r"^\[(S\d+\.P\d+)\] (.*)$", passage, flags=re.M)
    kps = [dict(level="factual", statement=_sents(win[0][1])[0], paragraphs=[win[0][0]], confidence=0.9)]
    if len(win) > 1:
        kps.append(dict(level="conceptual", statement=_sents(win[-1][1])[-1], paragraphs=[win[-1][0]], confidence=0.7))
    others = [i for i in ids if i not in win]
    if others:
        kps.append(
            dict(
                level="reasoning",
                statement=f"{_sents(win[0][1])[0].rstrip('.')} relates to {others[0][0]}.",
                paragraphs=[win[0][0], others[0][0]],
                confidence=0.5,
            )
        )
    return json.dumps(dict(knowledge_points=kps))


def _scripted_question(p: str, ids: list) -> str:
    "The generation answer: the knowledge point with its number (or last word) blanked out."
    kp = re.search(r"Knowledge point \(\w+\): (.*)", p).group(1)
    src = ids[0][0] if ids else "S1.P1"
    words = [w for w in re.findall(r"[\w.,%-]+", kp) if len(w) > 2]
    ans = next((w for w in words if re.search(r"\d", w)), words[-1] if words else "yes").strip(".,")
    q = f"According to the paper, what completes this statement: {kp.replace(ans, '____')}"
    if "multiple-choice" in p:
        return json.dumps(
            dict(
                question=q,
                answer=ans,
                distractors=[f"not {ans}", f"{ans} or more", "neither"],
                explanation=f"The paper says: {kp}",
                evidence=[src],
            )
        )
    if "true/false" in p:
        return json.dumps(dict(statement=kp, answer=True, explanation="Stated in the paper.", evidence=[src]))
    return json.dumps(dict(question=q, answer=ans, explanation=f"The paper says: {kp}", evidence=[src]))


def scripted_reply(body: dict) -> str:
    "A deterministic reading-based answer to any AutoBench prompt (for FakeServer)."
    p = body["messages"][-1]["content"]
    ids = re.findall(r"^\[(S\d+\.P\d+)\] (.*)$", p, flags=re.M)
    if p.startswith("Extract testable knowledge points"):
        return _scripted_points(p, ids)
    if p.startswith("Write an exam question"):
        return _scripted_question(p, ids)
    if "Which paragraphs of the paper hold the evidence" in p:
        q = p.split("Question:")[-1]
        best = max(ids, key=lambda t: _ovl(q, t[1]))[0] if ids else "S9.P9"
        return json.dumps(dict(paragraph_ids=[best], answer="see paragraph"))
    if "which options are correct?" in p:
        ex = p.split("Question:")[0]
        opts = re.findall(r"^([A-D])\. (.*)$", p, flags=re.M)
        best = max(opts, key=lambda o: (_ovl(o[1], ex), -ord(o[0])))[0]
        return json.dumps(dict(correct_options=[best]))
    if "Does the candidate answer mean the same" in p:
        ref = re.search(r"Reference answer: (.*)", p).group(1)
        cand = re.search(r"Candidate answer: (.*)", p).group(1)
        ok = _ovl(ref, cand) >= 0.5 or ref.strip().lower() in cand.lower()
        return json.dumps(dict(rationale="overlap", answer="correct" if ok else "incorrect"))
    if "Question:" in p:
        ex = p.split("Question:")[0]
        opts = re.findall(r"^([A-D])\. (.*)$", p, flags=re.M)
        if opts:
            a = max(opts, key=lambda o: (_ovl(o[1], ex) if ex.strip() else 0, -ord(o[0])))[0] if ex.strip() else "A"
            return json.dumps(dict(rationale="reading", answer=a))
        if "True or false" in p:
            return json.dumps(dict(rationale="reading", answer="true" if ex.strip() else "false"))
        nums = re.findall(r"\d[\d.,%]*", ex)
        return json.dumps(dict(answer=nums[0].strip(".,") if nums else "unknown"))
    return "I do not know."


def fake_registry(base_url: str, path, names=("fake-gen", "fake-solver", "fake-judge")) -> Path:
    "A models.toml with `names` all served at `base_url` (point SCIBENCH_MODELS at it for fake-server runs)."
    p = Path(path)
    write_text(
        p,
        "".join(
            f'[models.{n}]\nbase_url = "{base_url}"\nmodel = "{n}"\nmax_retries = 0\ntimeout = 30\n\n' for n in names
        ),
    )
    return p

def perf_pipeline(points_per_paper: int = 3) -> dict:
    "AB1: a whole sample run through `scibench.run.execute` against the fake server, cold and again from the cache."
    with FakeServer(reply=scripted_reply) as fs, tempfile.TemporaryDirectory() as t:
        env = dict(
            SCIBENCH_MODELS=str(fake_registry(fs.base_url, Path(t) / "m.toml")),
            SCIBENCH_CACHE=str(Path(t) / "c"),
            SCIBENCH_RESULTS=str(Path(t) / "r"),
        )
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            p = dict(
                model="fake-gen",
                judge="fake-judge",
                solver="fake-solver",
                solvers="fake-solver,fake-solver+evidence",
                evaluate_models="fake-solver",
                points_per_paper=points_per_paper,
                n_resamples=200,
            )
            embed(["warm up"])
            c0, t0 = time.process_time(), time.perf_counter()
            a = execute("autobench", p, notebook=False, progress=False)
            cold, cpu = time.perf_counter() - t0, time.process_time() - c0
            calls = fs.calls
            t0 = time.perf_counter()
            b = execute("autobench", p, notebook=False, progress=False)
            warm = time.perf_counter() - t0
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return dict(
        name="AB1 autobench run (execute, fake server)",
        status=f"{a['status']}/{b['status']}",
        questions=a["n"],
        calls_cold=calls,
        calls_rerun=fs.calls - calls,
        cold_s=round(cold, 2),
        rerun_s=round(warm, 2),
        rerun_over_cold=round(warm / cold, 3),
        target="rerun makes 0 calls",
        cpu_ms_per_request=round(1000 * cpu / max(1, calls), 3),
        cpu_of="the whole cold run and the fake server (in this process)",
    )

_W4_VOCAB = STUB_WORDS  # random vocabulary: the papers' sentences
W4_SECTIONS = ("Introduction", "Related Work", "Method", "Experimental Setup", "Results", "Analysis", "Discussion")
W4_WINDOWS = 1 + 4 * len(
    W4_SECTIONS
)  # an abstract of one paragraph, then 8 paragraphs a section (windows of 3, stride 2)


def _w4_para(rng, k: int = 6) -> str:
    "A paragraph of `k` sentences of random vocabulary, one with a number."
    s = [" ".join(rng.choice(_W4_VOCAB) for _ in range(rng.randint(12, 18))).capitalize() for _ in range(k)]
    s[1] += f" reaches {rng.randint(10, 990) / 10} percent"
    return ". ".join(s) + "."


def _w4_paper(rng, pid: str, field: str) -> dict:
    return dict(
        paper_id=pid,
        title=f"Synthetic {field} paper {pid}",
        abstract=[dict(section="Abstract", text=_w4_para(rng))],
        body_text=[dict(section=s, text=_w4_para(rng)) for s in W4_SECTIONS for _ in range(8)],
    )


def w4_data(n: int, folder, split: str = "w4", seed: int = 0) -> Path:
    """A synthetic AutoBench split of `n` papers (S2ORC JSON, manifest, a related corpus of n/10) under `folder`;
    returns its folder."""
    rng, d = random.Random(seed), Path(folder) / "autobench" / split
    (d / "papers").mkdir(parents=True, exist_ok=True)
    fields = ("NLP", "ML", "Bioinformatics", "Physics")
    for man, ids in (
        ("papers.jsonl", [f"w4-{i:04d}" for i in range(n)]),
        ("related.jsonl", [f"w4-rel-{i:03d}" for i in range(max(2, n // 10))]),
    ):
        rows = []
        for i, pid in enumerate(ids):
            write_json(d / "papers" / f"{pid}.json", _w4_paper(rng, pid, fields[i % 4]))
            rows.append(dict(paper_id=pid, path=f"papers/{pid}.json", field=fields[i % 4]))
        write_jsonl(d / man, rows)
    return d


_W4_ID = re.compile(r"^\[(S\d+\.P\d+)\] (.*)$", re.M)
_W4_ASK = ("According to the paper, which term", "Which term, as the paper reports,", "In the paper, which word")
_W4_ASK_TF = ("", "The paper reports that ")


def _w4_read(q: str, ctx: str, opts):
    "The answer a reader of `ctx` gives to question text `q` (options `opts`), or None without a context."
    if not ctx:
        return None
    if opts:
        return next((l for l, o in opts if f" {o.lower()} " in f" {ctx.lower()} "), opts[0][0])
    if q.startswith("True or false: "):  # a statement of the text is true
        st = q[15:].strip().removeprefix(_W4_ASK_TF[1]).rstrip(".")
        return "true" if re.sub(r" which explains \S+$", "", st).lower() in ctx.lower() else "false"
    pre = " ".join(q.partition(" ____")[0].partition("statement: ")[2].split()[-3:])
    i = ctx.find(pre)
    return ctx[i + len(pre) :].split()[0].strip(".,") if i >= 0 and ctx[i + len(pre) :].split() else "unknown"


def _w4_points(p: str, h: int) -> str:
    "W4's extraction answer (one window in 50 fails)."
    if h % 50 == 0:
        return "Sorry, I cannot extract anything from this passage."
    head, _, others = p.partition("\n\nOther sections")
    win, other = _W4_ID.findall(head), _W4_ID.search(others)
    first = lambda t: _sents(t)[0]
    kps = [dict(level="factual", statement=first(win[0][1]), paragraphs=[win[0][0]], confidence=0.9)]
    if len(win) > 1:
        kps.append(dict(level="conceptual", statement=_sents(win[-1][1])[-1], paragraphs=[win[-1][0]], confidence=0.7))
    if other:
        kps.append(
            dict(
                level="reasoning",
                statement=f"{_sents(win[0][1])[2].rstrip('.')} which explains {other.group(1)}.",
                paragraphs=[win[0][0], other.group(1)],
                confidence=0.5,
            )
        )
    return json.dumps(dict(knowledge_points=kps))


def _w4_question(p: str, h: int) -> str:
    "W4's generation answer (one in 25 fails; the wording varies with the context)."
    if h % 25 == 0:
        return "Here is a question: what does the paper say?"
    kp = re.search(r"Knowledge point \(\w+\): (.*)", p).group(1)
    head = " ".join(kp.split()[:3])
    src = next(
        (m for m in _W4_ID.finditer(p.partition("Excerpts:\n")[2]) if head in m.group(2)), None
    )  # the source paragraph
    words = [w.strip(".,") for w in kp.split()[1:]]
    ans = next((w for w in words if re.fullmatch(r"\d+\.\d", w)), max(words, key=len))
    # the wording varies with the context
    q = f"{_W4_ASK[h % len(_W4_ASK)]} completes this statement: {kp.replace(ans, '____', 1)}"
    ev = [src.group(1)] if src else []
    if "multiple-choice" in p:
        return json.dumps(
            dict(
                question=q,
                answer=ans,
                distractors=[f"{ans}ase", f"non{ans}", f"{ans}oid"],
                explanation=f"The paper says: {kp}",
                evidence=ev,
            )
        )
    if "true/false" in p:
        false = h % 3 == 0
        return json.dumps(
            dict(
                statement=_W4_ASK_TF[h % 2] + (kp.replace(ans, f"non{ans}", 1) if false else kp),
                answer=not false,
                explanation="Stated in the paper.",
                evidence=ev,
            )
        )
    return json.dumps(dict(question=q, answer=ans, explanation=f"The paper says: {kp}", evidence=ev))


def _w4_cite(p: str, h: int) -> str:
    "W4's answerability answer: the paragraph holding three words of the question (one in 40 fails)."
    if h % 40 == 1:
        return "The evidence is somewhere in the paper."
    paper, _, q = p.partition("\n\nQuestion: ")
    w = (
        (q.partition("statement: ")[2] or q.partition("True or false: ")[2].removeprefix(_W4_ASK_TF[1]))
        .split("\n")[0]
        .split()
    )
    i = next(
        (
            i
            for i in (
                paper.find(" ".join(w[k : k + 3])) for k in range(len(w) - 2) if "____" not in " ".join(w[k : k + 3])
            )
            if i >= 0
        ),
        -1,
    )
    j = paper.rfind("\n[", 0, i) if i >= 0 else -1  # the paragraph that holds three words of the question
    cite = paper[j + 2 : paper.index("]", j)] if j >= 0 and h % 8 else "S99.P1"
    return json.dumps(dict(paragraph_ids=[cite], answer="see the cited paragraph"))


def w4_reply(body: dict) -> str:
    "The fake server's answer to any AutoBench prompt for W4 (deterministic; see above)."
    p = body["messages"][-1]["content"]
    h = int(hashlib.sha1(p.encode()).hexdigest()[:8], 16)
    if p.startswith("Extract testable knowledge points"):
        return _w4_points(p, h)
    if p.startswith("Write an exam question"):
        return _w4_question(p, h)
    if "Which paragraphs of the paper hold the evidence" in p:
        return _w4_cite(p, h)
    opts = re.findall(r"^([A-D])\. (.*)$", p, flags=re.M)
    if "which options are correct?" in p:
        ex = p.partition("\n\nQuestion: ")[0]
        co = [l for l, o in opts if f" {o.lower()} " in f" {ex.lower()} "]
        if h % 5 == 0:
            co = [l for l, _ in opts]
        return json.dumps(dict(correct_options=co))
    if "Does the candidate answer mean the same" in p:
        ref, cand = re.search(r"Reference answer: (.*)", p).group(1), re.search(r"Candidate answer: (.*)", p).group(1)
        return json.dumps(
            dict(rationale="compared", answer="correct" if ref.strip().lower() == cand.strip().lower() else "incorrect")
        )
    if "Question: " in p:
        ctx, _, rest = p.rpartition("Question: ")
        q = rest.split("\n\n")[0].split("\nA. ")[0]
        a = _w4_read(q, ctx, opts)
        calib = "Difficulty test" in p
        if a is None or h % (4 if calib and "Paper:\n" in ctx else 6) == 0:  # closed book: a guess; some readers err
            a = (
                (opts[h % len(opts)][0] if opts else "true" if h % 2 else "false")
                if opts or q.startswith("True or false")
                else "unknown"
            )
        return json.dumps(
            dict(answer=a)
            if calib or not (opts or q.startswith("True or false"))
            else dict(rationale="from the text", answer=a)
        )
    return "I do not know."


def _w4_stages(n: int):
    """The dependent stages' calls: extraction (one per window), generation (the rest of the generator's), then checks,
    calibration and grading."""

    def stages(u):
        ext = n * W4_WINDOWS
        return dict(
            extract=ext,
            generate=u["model"]["calls"] - ext,
            check_calibrate_grade=sum(v["calls"] for k, v in u.items() if k not in ("total", "model")),
        )

    return stages


def w4_setup() -> None:
    "W4's one-time setup in the run's process, timed apart from the run: the local embedding model loaded."
    embed(["warm up"])


# the failure reasons of `w4_reply`'s deliberate bad answers (1 generation in 25, 1 answerability answer in 40)
W4_SCRIPTED = ("no JSON object in response",)
W4_FAILURES_ARE = (
    "the fake model's deliberate unparsable answers (1 generation in 25, 1 answerability citation in 40), recorded "
    "with their reasons; the run is complete while they are under 10% of its questions"
)


def w4_failures(r: dict) -> dict:
    """`r` (a `whole_run` line) with what its failures are put beside them: `failures_scripted` (the fake model's
    deliberate bad answers) and `failures_are`, saying so; `failures_unscripted` counts any other (target 0)."""
    out = {}
    for k, v in r.items():
        out[k] = v
        if k == "failures_unscripted":
            out.update(failures_scripted=r["failures"] - v, failures_are=W4_FAILURES_ARE)
    return out


W4_PARAMS = dict(
    model="fake", judge="fake", solver="fake", solvers="fake,fake+evidence,fake+paper", split="w4", n_resamples=200
)


def w4_autobench(
    n: int | None = None,
    concurrency: int | None = None,
    latency_dist=None,
    small: int | None = None,
    env: dict | None = None,
) -> dict:
    """W4: a whole AutoBench run of `n` synthetic papers (default 2; 100 with `SCIBENCH_BENCH_FULL=1`) against the fake
    server, a rerun from the cache, and a cold run at `small` (default n/4) for flatness (`bench.perf.whole_run`).
    Its serial compute is the local embedding of every paragraph, knowledge point and question (`compute_s`)."""
    n, latency_dist = n or (100 if bench_full() else 2), tuple(latency_dist or W1_LATENCY)
    r = whole_run(
        WholeRun(
            "W4 AutoBench whole run",
            "autobench",
            W4_PARAMS,
            w4_data,
            n,
            small or max(1, n // 4),
            "bench.autobench:w4_reply",
            stages=_w4_stages(n),
            each=("check_calibrate_grade",),  # a question's checks go out when it is generated
            setup="bench.autobench:w4_setup",
            scripted=W4_SCRIPTED,
            concurrency=concurrency or W1_CONCURRENCY,
            latency_dist=latency_dist,
            env=env,
        )
    )
    return w4_failures(r)


PERF = {"AB1": perf_pipeline, "W4": w4_autobench}  # `make bench`: name → figure
