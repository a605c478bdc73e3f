"""Rubrics (Hong et al.): LLM-written checklist rubrics for paper reproduction, graded against PaperBench."""
