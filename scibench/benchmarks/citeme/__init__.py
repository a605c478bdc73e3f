"""CiteME (Press et al., 2024): name the paper an excerpt cites, without search or as CiteAgent over an arXiv index."""
