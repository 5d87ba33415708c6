"""Built-in plugin that contributes the shipped suites and hardware profiles."""
from __future__ import annotations

import pathlib

import harness_profiles
import harness_suites

from harness import hookimpl


@hookimpl
def harness_suite_dirs() -> list[pathlib.Path]:
    return [pathlib.Path(harness_suites.__file__).parent]


@hookimpl
def harness_hardware_profiles() -> list[pathlib.Path]:
    return [pathlib.Path(harness_profiles.__file__).parent]
