"""The development lab, outside the package: the fake OpenAI-compatible server (`bench.fakeserver`) and the
performance figures of `make bench` (`bench.perf`: P1-P6; one module per benchmark: its whole-run figures)."""
