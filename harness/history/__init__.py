"""History from real records: series per case and machine, their change points, and what changed
at each (``harness history``); the same series as asv result files (``harness export-asv``)."""
