"""Result records: the versioned JSON Schema, building records, the JSONL store, DataFrames."""
from harness.results.frame import load, load_frame  # noqa: F401
from harness.results.store import load_records, read_records, results_files  # noqa: F401
