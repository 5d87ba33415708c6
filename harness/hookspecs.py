"""Every hook of the `harness` plugin system, in one file.

Plugins are modules (or objects) registered through the entry-point group
``harness.plugins``. They implement any subset of these hooks with
``@harness.hookimpl``. Built-in plugins use the very same group.
"""
from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from harness.backend import Backend
    from harness.workload import Workload

PROJECT = "harness"
ENTRY_POINT_GROUP = "harness.plugins"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def harness_workloads() -> list[Workload]:
    """Return the workloads this plugin provides (instances of :class:`harness.Workload`).

    Names must be unique across all plugins; a duplicate is reported by
    ``harness list`` and only the first one registered is used.
    """


@hookspec
def harness_backends() -> list[Backend]:
    """Return the compute backends this plugin provides (instances of :class:`harness.Backend`)."""


@hookspec
def harness_hardware_profiles() -> list[pathlib.Path]:
    """Return folders holding hardware profile TOML files (one node type per file)."""


@hookspec
def harness_suite_dirs() -> list[pathlib.Path]:
    """Return folders holding suite TOML files, so a plugin can ship its own suites."""


@hookspec
def harness_case_finished(record: dict[str, Any]) -> None:
    """Called in the parent process after each case's record is written.

    ``record`` is the validated record (a plain dict, see the record JSON Schema).
    Use it for exporters or live dashboards; exceptions are reported, never fatal.
    """


@hookspec
def harness_run_finished(records: list[dict[str, Any]], out_dir: pathlib.Path) -> None:
    """Called once at the end of ``harness run`` with the ok records of the run (and, with
    ``--resume``, the earlier ok ones). Use it for cross-case figures written into ``out_dir``
    (e.g. a sweep plot); exceptions are reported, never fatal.
    """
