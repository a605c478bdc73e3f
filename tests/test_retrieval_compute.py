"""The compute embeddings took (`compute_seconds`) and BM25 term scores computed once per index (issue 22, item 2)."""
import random, threading

import numpy as np
from rank_bm25 import BM25Okapi

from scibench import retrieval
from scibench.retrieval import Index, compute_seconds, embed, tokenize


def test_bm25_term_memo_is_rank_bm25_bit_for_bit():
    rng = random.Random(0)
    words = "model data train loss eval seed accuracy table figure run step".split()
    docs = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(30)] + [""]
    ref = BM25Okapi([tokenize(d) or ["_"] for d in docs])
    ix = Index(docs)
    for _ in range(3):  # again: from the memo
        for q in ["model model loss", "unknownword train", "", "seed accuracy accuracy table", "x y z"]:
            assert np.array_equal(ix.scores(q, "bm25"), ref.get_scores(tokenize(q))), q
    assert set(ix._terms) >= {"model", "loss", "unknownword"}
    small = Index(docs)
    old = retrieval.TERM_MEMO_FLOATS
    retrieval.TERM_MEMO_FLOATS = 0  # the memo's bound: nothing kept, the same scores
    try:
        assert np.array_equal(small.scores("model loss", "bm25"), ref.get_scores(["model", "loss"]))
        assert small._terms == {}
    finally:
        retrieval.TERM_MEMO_FLOATS = old


def test_compute_seconds_counts_embedding_in_any_thread():
    embed(["warm up"])
    c0 = compute_seconds()
    out = []
    t = threading.Thread(target=lambda: out.append(embed(["train the model for 3 epochs"] * 8)))
    t.start()
    t.join()
    mid = compute_seconds()
    assert out[0].shape == (8, 384) and mid > c0
    embed([])  # nothing to compute: nothing counted
    assert compute_seconds() == mid
