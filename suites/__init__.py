"""Suite TOML files shipped with hpml-harness (import name ``harness_suites``)."""
