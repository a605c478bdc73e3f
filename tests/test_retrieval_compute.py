"""The compute embeddings took (`compute_seconds`) and BM25 scores as rank_bm25 gives them."""
import random, threading

import numpy as np
from rank_bm25 import BM25Okapi

from scibench.retrieval import Index, compute_seconds, embed, tokenize


def test_bm25_scores_are_rank_bm25_bit_for_bit():
    rng = random.Random(0)
    words = "model data train loss eval seed accuracy table figure run step".split()
    docs = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(30)] + [""]
    ref = BM25Okapi([tokenize(d) or ["_"] for d in docs])
    ix = Index(docs)
    for q in ["model model loss", "unknownword train", "", "seed accuracy accuracy table", "x y z"]:
        assert np.array_equal(ix.scores(q, "bm25"), ref.get_scores(tokenize(q))), q


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
