"""W1: a whole AbGen run at the paper's size against the fake server (`make bench`)."""


from __future__ import annotations
import hashlib, json, random
from pathlib import Path
from bench.perf import W1_CONCURRENCY, W1_LATENCY, _W1_VOCAB, WholeRun, whole_run
from bench import bench_full

__all__ = ['PERF', 'w1_abgen_data', 'w1_reply', 'w1_abgen']

def _w1_text(rng, words: int) -> str:
    return " ".join(rng.choice(_W1_VOCAB) for _ in range(words)) + "."


def w1_abgen_data(n: int, folder, split: str = "test", seed: int = 0) -> Path:
    "A synthetic AbGen split of `n` examples in the real schema at the paper's mean sizes; returns the split's file."
    rng = random.Random(seed)
    p = Path(folder) / "abgen" / f"{split}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w") as f:
        for i in range(n):  # context ≈ 300 + 700 + 450 + 400 words = 1,850; reference ablation ≈ 145 words
            e = dict(
                example_id=f"w1-{i:05d}",
                arxiv_id=f"w1.{i:05d}",
                title=f"Synthetic paper {i}",
                research_background=_w1_text(rng, 300),
                method=_w1_text(rng, 700),
                main_experiment=dict(experiment_setup=_w1_text(rng, 450), results=_w1_text(rng, 400)),
                ablation_study=dict(
                    module_name=f"module {i % 97}",
                    research_objective=_w1_text(rng, 25),
                    experiment_setup=_w1_text(rng, 120),
                    results=_w1_text(rng, 60),
                ),
            )
            f.write(json.dumps(e) + "\n")
    return p


def w1_reply(body: dict) -> str:
    """The fake server's answer for W1: a judge (system turn present) gives a ~100-word rationale and a score; else a
    ~250-word design."""
    h = int(hashlib.sha1(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()[:8], 16)
    words = lambda k: " ".join(_W1_VOCAB[(h + 7 * j) % len(_W1_VOCAB)] for j in range(k))
    if any(m["role"] == "system" for m in body["messages"]):
        return f"{words(100)}. Therefore, the score is: {1 + h % 5}"
    return f"Research Objective: {words(20)}.\nExperiment Process: {words(230)}."

def w1_abgen(
    n: int | None = None,
    concurrency: int = W1_CONCURRENCY,
    latency_dist=W1_LATENCY,
    small: int | None = None,
    env: dict | None = None,
) -> dict:
    """W1: a whole AbGen run of `n` synthetic examples (default 250; 1,000 with `SCIBENCH_BENCH_FULL=1`) against the
    fake server, a rerun from the cache, and a cold run at `small` (default n/4) for flatness (see `whole_run`)."""
    n = n or (1000 if bench_full() else 250)
    return whole_run(
        WholeRun(
            "W1 AbGen whole run",
            "abgen",
            dict(model="fake", judge="fake", split="test", prompts="scibench", protocol="scibench"),
            w1_abgen_data,
            n,
            small or max(1, n // 4),
            "bench.abgen:w1_reply",
            stages=lambda u: dict(generate=u["model"]["calls"], judge=u["judge"]["calls"]),
            each=("judge",),  # an example's 4 judge calls go out when its design arrives
            concurrency=concurrency,
            latency_dist=tuple(latency_dist),
            env=env,
        )
    )


PERF = {"W1": w1_abgen}
