"""BENCHMARKS.md (`render`) and its charts (`charts`), made from `benchmarks/results/`."""
