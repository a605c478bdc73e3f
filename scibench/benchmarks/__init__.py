"""The benchmarks, one package each: importing a package's modules registers what it declares (found by discovery,
`scibench.bench.benchmarks`; no shared module names one)."""
