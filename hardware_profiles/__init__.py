"""Hardware profile TOML files, one node type per file (import name ``harness_profiles``)."""
