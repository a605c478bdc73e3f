"""ArxivBench: paper recommendations with real arXiv links, verified against arXiv metadata."""
