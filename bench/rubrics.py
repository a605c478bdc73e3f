"""P4 (the vectorized intrinsic metrics against a per-pair loop), P4b (the intrinsic metrics at PaperBench's scale) and
W3 (a whole Rubrics run at the paper's size against the fake server). `PERF` names them for `bench.perf`; this
module reads the benchmark (`scibench.benchmarks.rubrics.method`), never the reverse."""


from __future__ import annotations
import hashlib, json, os, re, time
from pathlib import Path
import numpy as np
from bench import bench_full
from scibench.core import write_json, write_text
from scibench.benchmarks.rubrics.paperbench import CATEGORIES
from scibench.benchmarks.rubrics.method import (
    ANSWER_FORMAT,
    FORCE_WRITE,
    OBS_CHARS,
    RUBRIC_FILE,
    SETTINGS,
    SKILL_REQUEST,
    TAUS,
    _example_file,
    embed_map,
    example_views,
    intrinsic,
    load_papers,
    other_papers,
)
from scibench.metrics import rouge_matrices, rouge_tokens

__all__ = ['PB_LEAF_COUNTS', 'W3_PAPER_CHARS', 'W3_REPOS', 'W3_ITEMS', 'W3_FILES', 'PERF', 'naive_intrinsic', 'p4_intrinsic',
           'p4_scale', 'w3_rubrics_data', 'w3_reply', 'w3_setup', 'w3_rubrics']

def naive_intrinsic(generated, reference, taus=TAUS) -> dict:
    "The per-pair loop (rouge_score per pair, one embedding call per item): the P4 baseline and a cross-check."
    from rouge_score import rouge_scorer
    from scibench.retrieval import embed

    sc = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    r1, rl = [], []
    for g in generated:
        best1 = bestl = 0.0
        for r in reference:
            s = sc.score(r, g)
            best1, bestl = max(best1, s["rouge1"].fmeasure), max(bestl, s["rougeL"].fmeasure)
        r1.append(best1)
        rl.append(bestl)
    eg, er = [embed([g])[0] for g in generated], [embed([r])[0] for r in reference]
    out = dict(max_rouge1=float(np.mean(r1)), max_rougeL=float(np.mean(rl)))
    for t in taus:
        mg = [any(float(a @ b) > t for b in er) for a in eg]
        mr = [any(float(a @ b) > t for a in eg) for b in er]
        p, r = float(np.mean(mg)), float(np.mean(mr))
        out.update({f"precision@{t}": p, f"recall@{t}": r, f"f1@{t}": 2 * p * r / (p + r) if p + r > 0 else 0.0})
    return out

def _synthetic_rubric(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    verbs = ["Implement", "Train", "Evaluate", "Report", "Plot", "Compute", "Run", "Compare", "Log", "Tune"]
    nouns = [
        "the loss",
        "the encoder",
        "ResNet-18",
        "the replay buffer",
        "the policy",
        "ECE with 15 bins",
        "three seeds",
        "the baseline",
        "CIFAR-10",
        "the learning rate schedule",
        "accuracy",
        "the ablation",
        "the target network",
        "the sampling probability",
        "success curves",
        "the temperature",
        "the results table",
        "the optimizer",
    ]
    tail = [
        "as in the paper",
        "for 30 epochs",
        "with SGD",
        "on the test set",
        "and save the logs",
        "using Adam",
        "with batch size 128",
        "every 10k steps",
        "and report the mean",
        "within one point of the paper",
    ]
    return [
        f"{rng.choice(verbs)} {rng.choice(nouns)} {rng.choice(tail)} and {rng.choice(nouns)} {rng.choice(tail)}"
        for _ in range(n)
    ]

def p4_intrinsic(n_pairs: int = 20, n_items: int = 100, n_naive: int = 2, n_embed_pairs: int = 50) -> dict:
    from rouge_score import rouge_scorer
    from scibench.retrieval import embed

    pairs = [(_synthetic_rubric(n_items, 2 * i), _synthetic_rubric(n_items, 2 * i + 1)) for i in range(n_pairs)]
    embed(["warm up"])
    rouge_tokens(["warm up"])
    t0 = time.perf_counter()
    [intrinsic(g, r) for g, r in pairs]
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    rv = [rouge_matrices(g, r) for g, r in pairs[:n_naive]]
    t_rouge_vec = (time.perf_counter() - t0) / n_naive
    sc = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=True)
    t0 = time.perf_counter()
    agree = True
    for (g, r), (r1, rl) in zip(pairs[:n_naive], rv):
        for i, a in enumerate(g):
            for j, b in enumerate(r):
                s = sc.score(b, a)
                agree &= abs(s["rouge1"].fmeasure - r1[i, j]) < 1e-6 and abs(s["rougeL"].fmeasure - rl[i, j]) < 1e-6
    t_rouge_naive = (time.perf_counter() - t0) / n_naive
    g, r = pairs[0]
    cos = []
    t0 = time.perf_counter()
    for q in range(n_embed_pairs):
        cos.append(float(embed([g[q % n_items]])[0] @ embed([r[(q * 7) % n_items]])[0]))
    t_embed_pair = (time.perf_counter() - t0) / n_embed_pairs
    E = embed_map(g + r)
    agree &= all(abs(c - float(E[g[q % n_items]] @ E[r[(q * 7) % n_items]])) < 1e-4 for q, c in enumerate(cos))
    per_vec = t_vec / n_pairs
    naive_est = t_rouge_naive + t_embed_pair * n_items * n_items
    return dict(
        name="P4 intrinsic metrics",
        pairs=n_pairs,
        items=f"{n_items}x{n_items}",
        vectorized_s=round(t_vec, 2),
        per_pair_vectorized_s=round(per_vec, 3),
        rouge_vectorized_s=round(t_rouge_vec, 3),
        rouge_naive_s=round(t_rouge_naive, 2),
        rouge_speedup=round(t_rouge_naive / t_rouge_vec, 1),
        naive_embed_per_item_pair_s=round(t_embed_pair, 4),
        naive_embed_s_est=round(t_embed_pair * n_items * n_items, 1),
        speedup_est=round(naive_est / per_vec, 1),
        values_agree=bool(agree),
        target=">= 10x",
    )

# leaf counts of the 10 real PaperBench trees in shared/data (PaperBench's 20 papers span the same range)
PB_LEAF_COUNTS = (123, 174, 279, 172, 437, 916, 1963, 206, 275, 921)


def p4_scale(n_papers: int | None = None, n_sets: int = 5, n_items: int = 80) -> dict:
    """P4b: the intrinsic metrics of a whole paper-scale run — `n_papers` reference trees of PaperBench's sizes
    (`PB_LEAF_COUNTS`, synthetic leaves of ~150 characters) against `n_sets` generated rubrics of `n_items` each
    per paper, as `run` computes them: every text embedded once (`embed_map`), every pair's ROUGE and matching.
    Timed cold (an empty embedding cache) and warm (the same texts again: a rerun, or another setting's run)."""
    import tempfile
    from scibench.retrieval import EmbeddingCache, embed

    n_papers = n_papers or (20 if bench_full() else 4)  # the default `make bench` stays short
    long = lambda n, seed: [a + "; " + b for a, b in zip(_synthetic_rubric(n, seed), _synthetic_rubric(n, seed + 7919))]
    refs = [long(PB_LEAF_COUNTS[i % len(PB_LEAF_COUNTS)], 1000 + i) for i in range(n_papers)]
    gens = [[long(n_items, 100_000 + 10 * i + s) for s in range(n_sets)] for i in range(n_papers)]
    texts = [t for r in refs for t in r] + [t for gs in gens for g in gs for t in g]
    embed(["warm up"])
    rouge_tokens(["warm up"])
    out = {}
    with tempfile.TemporaryDirectory() as d:
        cache = EmbeddingCache(Path(d) / "emb.sqlite")
        for phase in ("cold", "warm"):
            t0 = time.perf_counter()
            emb = embed_map(texts, cache=cache)
            t_emb = time.perf_counter() - t0
            toks: dict = {}
            vals = [intrinsic(g, r, emb=emb, toks=toks) for r, gs in zip(refs, gens) for g in gs]
            out[phase] = (time.perf_counter() - t0, t_emb)
    return dict(
        name="P4b intrinsic metrics at PaperBench scale",
        papers=n_papers,
        rubric_sets=n_papers * n_sets,
        reference_leaves=sum(map(len, refs)),
        generated_items=n_papers * n_sets * n_items,
        distinct_texts=len(set(texts)),
        cold_s=round(out["cold"][0], 1),
        cold_embed_s=round(out["cold"][1], 1),
        warm_s=round(out["warm"][0], 1),
        warm_embed_s=round(out["warm"][1], 2),
        f1_mean=round(float(np.mean([v["f1@0.7"] for v in vals])), 3),
        target="<= 60 s",
    )

W3_PAPER_CHARS = 60_000  # a paper's markdown (PaperBench papers with appendices run 60-190 KB)
W3_REPOS = 5  # repositories graded per paper (the paper's setup)
W3_ITEMS = 80  # items of a generated rubric (the human scale; the paper's settings average 36-87)
W3_FILES = (
    ("README.md", 1500),
    ("train.py", 4000),
    ("model.py", 3000),
    ("eval.py", 2500),
    ("config.yaml", 600),
    ("results.md", 1200),
    ("utils.py", 2000),
    ("reproduce.log", 3000),
)
_W3_Q = re.compile(r"reproduction quality: (\d)/4")

def _w3_words(rng, chars: int) -> str:
    words = _synthetic_rubric(max(1, chars // 60), int(rng.integers(1 << 30)))
    return " ".join(words)[:chars]


def w3_rubrics_data(n: int, folder, split: str = "w3", seed: int = 0, leaf_counts=PB_LEAF_COUNTS) -> Path:
    """`n` synthetic papers in a split's layout (papers, reference trees with `leaf_counts` leaves, cycled: PaperBench's
    sizes by default; 5 repositories each); returns the split's folder."""
    rng = np.random.default_rng(seed)
    root = Path(folder) / split
    meta = []
    for i in range(n):
        pid = f"w3-{i:03d}"
        meta.append(dict(id=pid, title=f"Synthetic paper {i}", category="Synthetic"))
        chars = W3_PAPER_CHARS - 1500 * (i % 5)  # papers differ in length (and so in their agents' step budgets)
        text = f"# Synthetic paper {i}\n\n" + "\n\n".join(
            f"## Section {s}\n{_w3_words(rng, 3000)}" for s in range(chars // 3000 + 1)
        )
        write_text(root / "papers" / pid / "paper.md", text[:chars])
        n_leaves = leaf_counts[i % len(leaf_counts)]
        reqs = [
            a + "; " + b for a, b in zip(_synthetic_rubric(n_leaves, 7 * i), _synthetic_rubric(n_leaves, 7 * i + 3))
        ]
        leaf = lambda j: dict(
            id=f"{pid}-l{j}",
            requirements=reqs[j],
            weight=1 + j % 3,
            sub_tasks=[],
            task_category=CATEGORIES[j % 3],
            finegrained_task_category=None,
        )
        groups = [
            dict(
                id=f"{pid}-g{g}",
                requirements=f"Part {g} of the reproduction: {reqs[g * 10]}",
                weight=1 + g % 2,
                sub_tasks=[leaf(j) for j in range(g * 10, min(n_leaves, g * 10 + 10))],
                task_category=None,
            )
            for g in range(-(-n_leaves // 10))
        ]
        write_json(
            root / "papers" / pid / "rubric.json",
            dict(
                id=f"{pid}-root",
                requirements=f"Synthetic paper {i} is reproduced.",
                weight=1,
                sub_tasks=groups,
                task_category=None,
            ),
        )
        for r in range(W3_REPOS):
            for name, size in W3_FILES:
                write_text(
                    root / "repos" / pid / f"attempt{r}" / name,
                    f"# reproduction quality: {r % 5}/4\n" + _w3_words(rng, size),
                )
    write_json(root / "papers.json", meta)
    return root

def _w3_hash(*parts) -> int:
    return int(hashlib.sha1("\x00".join(parts).encode()).hexdigest()[:8], 16)


def _w3_n_items() -> int:
    return int(os.environ.get("SCIBENCH_W3_ITEMS") or W3_ITEMS)  # read in the fake server's process


def _w3_items(h: int, n: int | None = None) -> list[dict]:
    n = n or _w3_n_items()
    return [
        dict(criterion=c, importance=1 + (h + j) % 5, category=CATEGORIES[(h + j) % 3])
        for j, c in enumerate(_synthetic_rubric(n, h % (1 << 30)))
    ]


def _w3_action(thought: str, tool: str, **kw) -> str:
    return json.dumps(dict(thought=thought, tool=tool, **kw))

def w3_reply(body: dict) -> str:
    """The fake server's answer for W3, for each prompt type of a Rubrics run: a JSON rubric (direct, icl), the agent's
    next action (list, read every page of paper.md and the examples, write the rubric in two parts, finish), a prose
    skill document, or a pass/fail verdict (passing more often for a repository of higher quality)."""
    m = body["messages"]
    last = m[-1]["content"]
    if last.startswith("You grade a code repository"):
        q = _W3_Q.search(last)
        h = _w3_hash(last.split("## Repository files")[0], q.group(0) if q else "")
        ok = h % 4 < (int(q.group(1)) if q else 2)
        return json.dumps(
            {
                "answer": "pass" if ok else "fail",
                "rationale": f"the shown files {'do' if ok else 'do not'} implement it",
            }
        )
    if last.endswith(ANSWER_FORMAT):
        return json.dumps({"items": _w3_items(_w3_hash(last))})
    if not (m[0]["role"] == "system" and m[0]["content"].startswith("You are an agent")):
        return "unrecognised prompt"
    h = _w3_hash(m[0]["content"], m[1]["content"])
    k2 = _w3_n_items() // 2
    part = lambda k: "\n".join(json.dumps(i) for i in (_w3_items(h)[:k2] if k == 0 else _w3_items(h)[k2:]))
    if last == SKILL_REQUEST:
        return "# Writing reproduction rubrics\n" + " ".join(
            f"{k + 1}. {c}." for k, c in enumerate(_synthetic_rubric(25, h % 997))
        )
    if last == FORCE_WRITE:
        return _w3_action("write what I have", "write_file", path=RUBRIC_FILE, content=part(0))
    if len(m) == 2:
        return _w3_action("see the workspace", "list_files")
    act = json.loads(m[-2]["content"])
    files = ["paper.md"] + [
        l for l in m[3]["content"].removeprefix("Observation:\n").splitlines() if l.startswith("examples/")
    ]
    if act["tool"] == "read_file":
        more = re.search(r"read with offset (\d+)\]$", last)
        if more:
            return _w3_action("read on", "read_file", path=act["path"], offset=int(more.group(1)))
        i = files.index(act["path"]) if act["path"] in files else len(files)
        if i + 1 < len(files):
            return _w3_action("read the next file", "read_file", path=files[i + 1])
        return _w3_action("write the first part", "write_file", path=RUBRIC_FILE, content=part(0))
    if act["tool"] == "write_file":
        return _w3_action("add the second part", "append_file", path=RUBRIC_FILE, content=part(1))
    if act["tool"] == "append_file":
        return _w3_action("done", "finish")
    return _w3_action("read the paper", "read_file", path="paper.md")

def _w3_steps(papers: list[dict], p: dict, obs_chars: int = OBS_CHARS) -> int:
    """Steps of `w3_reply`'s agent on paper `p`: list, every page of paper.md and the example files, write, append,
    finish."""
    views = example_views(other_papers(papers, p["id"], 1))
    return 1 + -(-len(p["text"]) // obs_chars) + sum(-(-len(_example_file(v)) // obs_chars) for v in views) + 3


def _w3_chain(papers: list[dict], obs_chars: int = OBS_CHARS) -> int:
    """Calls of the longest dependent chain: distil the skill (an agent run + 1 turn), the skill setting's longest agent
    run, one grading call."""
    return _w3_steps(papers, papers[0], obs_chars) + 1 + max(_w3_steps(papers, p, obs_chars) for p in papers) + 1

def w3_setup() -> None:
    """W3's one-time setup in the run's process, timed apart from the run: the local embedding model loaded, ROUGE's
    tokenizer and stemmer imported (as P4 warms them)."""
    from scibench.retrieval import embed

    embed(["warm up"])
    rouge_tokens(["warm up"])

def w3_rubrics(
    n: int | None = None,
    settings=None,
    small: int | None = None,
    concurrency: int | None = None,
    latency_dist=None,
    env: dict | None = None,
    leaf_counts=PB_LEAF_COUNTS,
    items: int = W3_ITEMS,
) -> dict:
    """W3: a whole Rubrics run of `n` synthetic papers (default 2; 20 with `SCIBENCH_BENCH_FULL=1`) in `settings`
    (default all four) against the fake server, a rerun from the cache, and a cold run at `small` papers (default
    max(1, n/4)). `leaf_counts` (reference trees) and `items` (per generated rubric) shrink it for tests."""
    import tempfile
    from functools import partial
    from bench.perf import W1_CONCURRENCY, W1_LATENCY, WholeRun, chain_floor, whole_run

    n = n or (20 if bench_full() else 2)
    settings = list(settings or SETTINGS)
    concurrency, latency_dist = concurrency or W1_CONCURRENCY, tuple(latency_dist or W1_LATENCY)
    params = dict(model="fake", judge="fake", split="w3", settings=",".join(settings), judge_eval=False)
    data = partial(w3_rubrics_data, leaf_counts=tuple(leaf_counts))
    with tempfile.TemporaryDirectory() as d:
        chain = _w3_chain(load_papers(root=data(n, d)))
    _, median, sigma = latency_dist
    # W3's own floor: the agents' chain of calls but its last one after the other, then its rubric's gradings at once
    cb = (chain - 1) * median * np.exp(sigma**2 / 2) + chain_floor(1, {"grade": items * W3_REPOS}, median, sigma)
    old = os.environ.get("SCIBENCH_W3_ITEMS")
    os.environ["SCIBENCH_W3_ITEMS"] = str(items)  # the fake server process reads it
    try:
        r = whole_run(
            WholeRun(
                "W3 Rubrics whole run",
                "rubrics",
                params,
                data,
                n,
                small or max(1, n // 4),
                "bench.rubrics:w3_reply",
                stages=lambda u: dict(generate=u["model"]["calls"], grade=u["judge"]["calls"]),
                setup="bench.rubrics:w3_setup",
                concurrency=concurrency,
                latency_dist=latency_dist,
                env=env,
                chains=dict(agent_chain_s=cb),
            )
        )
    finally:
        if old is None:
            os.environ.pop("SCIBENCH_W3_ITEMS", None)
        else:
            os.environ["SCIBENCH_W3_ITEMS"] = old
    return dict(r, settings=",".join(settings), items_per_rubric=items, agent_chain_calls=chain)


PERF = {"P4": p4_intrinsic, "P4b": p4_scale, "W3": w3_rubrics}
