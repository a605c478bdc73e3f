"""AbGen (Zhao et al., ACL 2025): ablation-study design judged 1-5, and AbGen-Eval, judges against human scores."""
