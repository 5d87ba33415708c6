"""Exports to the tools users already run, one module each: ``junit`` (JUnit XML of a run, of
``harness controls`` and of ``harness check``), ``reframe`` (a ReFrame test library and site
configs), ``asv`` (airspeed velocity result files). Each takes records (or cases) and writes files
whole (``harness.output.atomic``); the verbs that call them are in ``harness/commands/``."""
