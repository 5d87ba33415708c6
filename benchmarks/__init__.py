"""asv benchmarks (bench_workloads.py) and stand-alone benchmark scripts (run with python)."""
