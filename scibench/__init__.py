"""Reproducible benchmarks of LLMs as research assistants: AbGen, Rubrics, AutoBench, ArxivBench"""

__version__ = "0.1.0"
