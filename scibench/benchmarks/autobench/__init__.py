"""AutoBench: a question benchmark generated from papers and filtered in four stages."""
