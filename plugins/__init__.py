"""Built-in plugins of hpml-harness (import name ``harness_plugins``).

Each is registered in pyproject.toml under the ``harness.plugins`` entry-point group,
exactly as a third-party plugin would be; the core imports none of them by name.
"""
