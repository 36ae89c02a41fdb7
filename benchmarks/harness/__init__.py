"""The pieces every study shares, one idea per module (benchmarks/README.md lists them)."""
