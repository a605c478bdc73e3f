"""Reproducible benchmarks of LLMs as research assistants: AbGen, Rubrics, AutoBench, ArxivBench

Modules:

- `scibench.benchmarks.rubrics.method`: Hanhua Hong, Yizhi Li, Jiaoyan Chen, Luu Gia Huy, Sophia Ananiadou, Jung-jae Kim, Chenghua Lin, *Can LLMs Write Reliable Rubrics? A Meta-Evaluation for Experiment Reproduction* (text in `shared/papers/001_*.txt`; no arXiv id is printed in it): checklist format and eq. 1, the four generation settings and Algorithm 1 (§3.2), intrinsic and extrinsic metrics (eqs. 2–7, §3.3), Tables 1–6. Reference rubrics and human gradings come from PaperBench (Starace et al., 2025, [arXiv:2504.01848](https://arxiv.org/abs/2504.01848))."""

__version__ = "0.1.0"
