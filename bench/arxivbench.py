"""P3 (the arXiv index's build memory and lookup speed) and W2 (a whole ArxivBench run at the paper's size against the
fake server), for `make bench`."""


from __future__ import annotations
import hashlib, json, os, random, re, sys, time
from pathlib import Path
import numpy as np
from bench import bench_full
from scibench.core import write_jsonl
from scibench.benchmarks.arxivbench.index import build_index, open_index
from scibench.benchmarks.arxivbench.method import SUBJECTS
from bench.perf import W1_CONCURRENCY, W1_LATENCY, WholeRun, whole_run

__all__ = ['W2_RECORDS', 'PERF', 'build_in_child', 'p3_index', 'w2_data', 'w2_reply', 'w2_arxivbench']

_FILLER = (
    "we propose a method for the problem above and evaluate it on several standard benchmarks, where it\n"
    "improves on strong baselines; we analyse when it fails and release code and data for reproduction. "
) * 5
_AUTHORS = [f"{c}. Author" for c in "ABCDEF"]

def _write_fake_snapshot(path, n: int, seed: int = 0, real_size: bool = False) -> Path:
    """A Kaggle-format JSON-lines file of `n` records (new- and old-style ids) for tests and P3 (not public API);
    streamed, 10,000 lines a write. `real_size`: records the size of the real snapshot's (~1.6 KB a line: a
    1,000-character abstract wrapped over lines, six authors, two versions) instead of ~0.55 KB."""
    rng = np.random.default_rng(seed)
    words = (
        "quantum graph neural learning random matrix spectral lattice gauge stochastic optimal transport kernel".split()
    )
    js = lambda x: json.dumps(x)[1:-1]
    authors = ", ".join(_AUTHORS[: 6 if real_size else 2])
    parsed = json.dumps([a.split(" ")[::-1] + [""] for a in _AUTHORS[: 6 if real_size else 2]])
    filler = js(_FILLER) if real_size else ""
    versions = json.dumps(
        [{"version": f"v{k}", "created": "Mon, 2 Apr 2007 19:18:42 GMT"} for k in range(1, 3 if real_size else 2)]
    )
    with open(path, "w", encoding="utf-8") as f:
        for c in range(0, n, 10_000):
            out = []
            for i, w in zip(
                range(c, min(n, c + 10_000)), rng.integers(0, len(words), size=(min(n, c + 10_000) - c, 6)).tolist()
            ):
                j = i // 10
                # ids valid for their era: 5-digit new-style ids from 1501 on; old-style ids 9101-9912, sequence numbers
                # from 001
                pid = (
                    f"{15 + i // 90000:02d}{1 + i // 7500 % 12:02d}.{i % 7500 + 1:05d}"
                    if i % 10
                    else f"{('hep-th', 'hep-ph', 'math', 'cond-mat')[j // 107892 % 4]}/"
                    f"{91 + j // 11988 % 9:02d}{1 + j // 999 % 12:02d}{j % 999 + 1:03d}"
                )
                t = f"{words[w[0]]} {words[w[1]]} {words[w[2]]} {words[w[3]]} {words[w[4]]} {words[w[5]]} {i}"
                cats = "hep-th math-ph" if i % 10 == 0 else "cs.LG stat.ML"
                # what json.dumps writes for the record (ids, titles and categories need no escaping)
                out.append(
                    f'{{"id": "{pid}", "submitter": "A. Author", "authors": "{authors}", "title": "{t}", '
                    '"comments": "10 pages", '
                    f'"journal-ref": null, "doi": null, "report-no": null, "categories": "{cats}", "license": null, '
                    f'"abstract": "  We study {t} and show that it is useful.\\n{filler}", "versions": {versions}, '
                    f'"update_date": "2008-11-13", "authors_parsed": {parsed}}}\n'
                )
            f.write("".join(out))
    return Path(path)

_BUILD_CHILD = """
import json, sys
import scibench.benchmarks.arxivbench.method   # the process `make data` builds in: the benchmark module loaded
from scibench.benchmarks.arxivbench.index import build_index
from bench import peak_rss_mb
st = build_index(sys.argv[1], sys.argv[2], **json.loads(sys.argv[3]))
print(json.dumps(dict(records=st.records, lines=st.lines, seconds=st.seconds, peak_rss_mb=peak_rss_mb())))
"""


def build_in_child(snapshot_path, index_path, **kw) -> dict:
    """`build_index(..., **kw)` in a fresh interpreter, so that its peak RSS is the build's alone: records, seconds and
    `peak_rss_mb`."""
    import subprocess

    r = subprocess.run(
        [
            sys.executable,
            "-c",
            _BUILD_CHILD,
            str(snapshot_path),
            str(index_path),
            json.dumps(kw),
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode:
        raise RuntimeError(f"index build failed (exit {r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])

def p3_index(
    n: int | None = None,
    lookups: int = 10_000,
    scans: int = 3,
    workdir=None,
    small: int | None = None,
) -> dict:
    """P3: build an index of `n` synthetic records (default 300,000; 3,000,000 with `SCIBENCH_BENCH_FULL=1`) and of its
    first `small` (default n/10) in fresh processes (peak RSS, flatness ratio), then time lookups against a linear
    scan."""
    import tempfile, random, itertools, shutil

    n = n or (3_000_000 if bench_full() else 300_000)
    small = small or max(1, n // 10)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="p3_"))
    tmp.mkdir(parents=True, exist_ok=True)
    src, src_small, dest, dest_small = (
        tmp / "snapshot.json",
        tmp / "snapshot_small.json",
        tmp / "index.sqlite",
        tmp / "index_small.sqlite",
    )
    try:
        t0 = time.perf_counter()
        _write_fake_snapshot(src, n, real_size=True)
        gen_s = time.perf_counter() - t0
        with open(src, "rb") as f, open(src_small, "wb") as g:
            g.writelines(itertools.islice(f, small))
        s = build_in_child(src_small, dest_small)
        dest_small.unlink(missing_ok=True)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        b = build_in_child(src, dest)
        ids = []
        with open(src) as f:
            for i, line in enumerate(f):
                if i % max(1, n // lookups) == 0:
                    ids.append(json.loads(line)["id"])
        rnd = random.Random(0)
        queries = [
            rnd.choice(ids)
            if k % 2 == 0
            else f"{rnd.randint(90, 99)}{rnd.randint(1, 12):02d}.{rnd.randint(1, 99999):05d}"
            for k in range(lookups)
        ]
        queries = [f"https://arxiv.org/abs/{x}v2" if k % 4 == 0 else x for k, x in enumerate(queries)]
        with open_index(dest) as ix:
            t0 = time.perf_counter()
            hits = sum(ix.get(x) is not None for x in queries)
            ix_s = time.perf_counter() - t0
        scan_ids = [rnd.choice(ids) for _ in range(scans)]
        t0 = time.perf_counter()
        for x in scan_ids:
            key = f'"id": "{x}"'
            with open(src) as f:
                for line in f:
                    if key in line and json.loads(line)["id"] == x:
                        break
        scan_s = (time.perf_counter() - t0) / scans
        per = ix_s / lookups
        return dict(
            name="P3 arXiv index",
            records=b["records"],
            snapshot_mb=round(src.stat().st_size / 2**20),
            generate_s=round(gen_s, 1),
            build_s=b["seconds"],
            build_vs_target=round(b["seconds"] / (180 * n / 3_000_000), 2),
            build_target="<= 1 (180 s x n/3M)",
            load_1min=load,
            build_peak_rss_mb=round(b["peak_rss_mb"]),
            rss_vs_target=round(b["peak_rss_mb"] / 1024, 2),
            rss_target="<= 1 (1 GB)",
            small_records=s["records"],
            small_peak_rss_mb=round(s["peak_rss_mb"]),
            rss_growth=round(b["peak_rss_mb"] / s["peak_rss_mb"], 2),
            rss_growth_target="~1 (flat)",
            index_mb=round(dest.stat().st_size / 2**20),
            lookups=lookups,
            hits=hits,
            lookups_per_s=round(lookups / ix_s),
            per_lookup_us=round(per * 1e6, 1),
            linear_scan_per_lookup_s=round(scan_s, 3),
            scans=scans,
            speedup=round(scan_s / per),
            speedup_target=">= 100",
        )
    finally:
        for f_ in (src, src_small, dest, dest_small):
            f_.unlink(missing_ok=True)
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)

W2_RECORDS = 20_000  # the synthetic index: 3 distinct papers for each of the paper's 6,500 prompts
_W2_VOCAB = (
    "graph neural network spectral kernel lattice gauge stochastic optimal transport quantum random matrix sparse "
    "bayesian inference causal estimation manifold learning convex policy gradient attention diffusion operator "
    "entropy market volatility protein folding signal channel coding equilibrium auction"
).split()
_W2_INVENTED = (
    "zorvexic plenthar quandrile moxified vantrel obscuron filtrane cadmic sorrelian trivex".split()
)  # in no title of the index

def _w2_words(key: str, k: int, vocab=_W2_VOCAB) -> list[str]:
    h = int(hashlib.sha1(key.encode()).hexdigest(), 16)
    return [vocab[(h >> (6 * j)) % len(vocab)] for j in range(k)]


def _w2_id(k: int) -> str:
    return f"{15 + k // 1_080_000:02d}{1 + k // 90_000 % 12:02d}.{k % 90_000 + 1:05d}"  # valid, 1501 on


def _w2_title(k: int) -> str:
    w = _w2_words(f"title {k}", 6)
    return f"{w[0].capitalize()} {w[1]} for {w[2]} {w[3]}: {w[4]} and {w[5]} {k}"

def _w2_plan(i: int, records: int = W2_RECORDS) -> list[tuple[str, str, str]]:
    """What the fake model lists for prompt `i`: (kind, title, id as written) per paper. Kinds: `real` (an id in the
    index, its title), `unrelated` (an id in the index, an invented title), `wrong_id` (a real title, an id not in
    the index), `invented`, `malformed`; 1 in 40 answers is a refusal (no paper), 1 in 15 lists two papers."""
    h = int(hashlib.sha1(f"w2 {i}".encode()).hexdigest()[:12], 16)
    if h % 40 == 0:
        return []
    out = []
    for j in range(2 if h % 15 == 1 else 3):
        k, r = (3 * i + j) % records, int(hashlib.sha1(f"w2 {i} {j}".encode()).hexdigest()[:8], 16) % 10
        invented = " ".join(_w2_words(f"invented {i} {j}", 5, _W2_INVENTED)).capitalize() + f" {i}-{j}"
        absent = f"2406.{(3 * i + j) % 99_999 + 1:05d}"  # a valid id after the index's months
        out.append(
            ("real", _w2_title(k), _w2_id(k))
            if r < 6
            else ("unrelated", invented, _w2_id(k))
            if r == 6
            else ("wrong_id", _w2_title(k), absent)
            if r == 7
            else ("invented", invented, absent)
            if r == 8
            else ("malformed", invented, f"1706.{(3 * i + j) % 9_999 + 1:04d}")
        )  # 4 digits after 1501: not an id
    return out

def w2_data(n: int, folder, split: str = "test", records: int | None = None, seed: int = 0) -> Path:
    """`n` synthetic prompts (13 subjects in turn) as `folder/arxivbench/<split>.jsonl` and an index of `records`
    (default `W2_RECORDS`, at least 3n) synthetic records at `folder/arxivbench/index.sqlite`; returns the prompts
    file."""
    rng = random.Random(seed)
    records = max(records or W2_RECORDS, 3 * n)
    d = Path(folder) / "arxivbench"
    d.mkdir(parents=True, exist_ok=True)
    subjects = list(SUBJECTS)
    write_jsonl(
        d / f"{split}.jsonl",
        [
            dict(
                id=f"w2-{i:05d}",
                subject=subjects[i % len(subjects)],
                prompt=f"Can you list research papers on {' '.join(rng.choice(_W2_VOCAB) for _ in range(4))} in "
                f"{subjects[i % len(subjects)]} (setting {i}), with their arXiv links?",
            )
            for i in range(n)
        ],
    )
    snap = d / "w2-snapshot.json"
    with open(snap, "w", encoding="utf-8") as f:
        for k in range(records):
            t = _w2_title(k)
            f.write(
                json.dumps(
                    {
                        "id": _w2_id(k),
                        "submitter": "A. Author",
                        "authors": ", ".join(_AUTHORS),
                        "title": t,
                        "comments": "10 pages",
                        "journal-ref": None,
                        "doi": None,
                        "report-no": None,
                        "categories": "cs.LG stat.ML",
                        "license": None,
                        "abstract": f"  We study {t.lower()} and show that it is useful.\n{_FILLER}",
                        "versions": [{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}],
                        "update_date": "2015-01-30",
                        "authors_parsed": [a.split(" ")[::-1] + [""] for a in _AUTHORS],
                    }
                )
                + "\n"
            )
    build_index(snap, d / "index.sqlite", on_error="raise")
    snap.unlink()
    return d / f"{split}.jsonl"

def w2_reply(body: dict) -> str:
    """The fake server's answers for W2: the papers `_w2_plan` lists (query); relevance yes (3 in 4) or no; title match
    yes, no or pass."""
    u = body["messages"][-1]["content"]
    h = int(hashlib.sha1(u.encode()).hexdigest()[:8], 16)
    why = " ".join(_w2_words(u, 30))
    if u.startswith("A researcher asked"):
        return json.dumps(dict(rationale=f"The paper is about {why}.", answer="no" if h % 4 == 0 else "yes"))
    if u.startswith("An AI assistant cited"):
        return json.dumps(
            dict(rationale=f"The record describes {why}.", answer=("yes", "yes", "yes", "no", "pass")[h % 5])
        )
    m = re.search(r"\(setting (\d+)\)", u)
    plan = _w2_plan(int(m.group(1))) if m else []
    if not plan:
        return "I'm sorry, but I cannot browse arXiv to list papers for this request."
    return "\n".join(
        f"{j}. [[{t}]] [[https://arxiv.org/abs/{pid}]]\n   It studies {' '.join(_w2_words(t, 12))}."
        for j, (_, t, pid) in enumerate(plan, 1)
    )

def w2_arxivbench(
    n: int | None = None,
    concurrency: int | None = None,
    latency_dist=None,
    small: int | None = None,
    env: dict | None = None,
) -> dict:
    """W2: a whole ArxivBench run of `n` synthetic prompts (default 1,000; the paper's 6,500 with
    `SCIBENCH_BENCH_FULL=1`) against the fake server, a rerun from the cache, and a cold run at `small` (default n/4)
    for flatness (`whole_run`)."""
    n = n or (6500 if bench_full() else 1000)
    relevance = sum(
        k in ("real", "unrelated") for i in range(n) for k, _, _ in _w2_plan(i)
    )  # one per listed paper in the index

    def stages(u):
        return dict(query=u["model"]["calls"], judge_relevance=relevance, judge_match=u["judge"]["calls"] - relevance)

    return whole_run(
        WholeRun(
            "W2 ArxivBench whole run",
            "arxivbench",
            dict(model="fake", judge="fake", split="test", protocol="paper"),
            w2_data,
            n,
            small or max(1, n // 4),
            "bench.arxivbench:w2_reply",
            stages=stages,
            each=("judge_relevance", "judge_match"),  # a listed paper's relevance call, then its title match
            concurrency=concurrency or W1_CONCURRENCY,
            latency_dist=tuple(latency_dist or W1_LATENCY),
            env=env,
        )
    )

PERF = {"P3": p3_index, "W2": w2_arxivbench}
