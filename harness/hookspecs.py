"""Every hook of the ``harness`` plugin system, in one file.

A plugin is a module (or object) registered under the entry-point group ``harness.plugins``
(``[project.entry-points."harness.plugins"]`` in its ``pyproject.toml``). It implements any
subset of these hooks, each marked ``@harness.hookimpl``. The built-in plugins use the very same
group. The parent process (``harness run``, ``list``, ``info``, ...) loads every plugin; the
worker that runs one case loads only the plugins of that case's workload and backend, on every
rank. Keep module import cheap: import heavy frameworks inside ``setup``/``run``.

A hook that raises is reported (``harness list`` shows it under plugin problems, or a warning
after a run) and never stops the harness.
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
    """The workloads this plugin provides.

    :return: instances (or subclasses) of :class:`harness.Workload`. Names must be Python
        identifiers and unique across plugins; a duplicate is reported and the first one
        registered is used. A workload that breaks the contract (no ``run``, a size setting an
        undeclared param, a claim's control naming an undeclared param, a malformed
        ``throughput``) is reported by ``harness list`` and left out.

    Called in: the parent, whenever the registry is built; and the worker, on every rank, before
    the case runs.
    """


@hookspec
def harness_backends() -> list[Backend]:
    """The compute backends this plugin provides.

    :return: instances (or subclasses) of :class:`harness.Backend`; names unique across plugins.

    Called in: the parent (availability, ``harness info``) and the worker, on every rank (the
    requested backend's ``activate`` before ``setup``, ``verify`` after the last repeat).
    """


@hookspec
def harness_hardware_profiles() -> list[pathlib.Path]:
    """Folders holding hardware profile TOML files (one node type per file), so a plugin can
    describe the machines it knows.

    :return: existing folders; a missing one is reported.

    Called in: the parent, when matching this machine to a profile (``harness run``, ``info``)
    and in ``harness list profiles``. Workers receive the folders in their case spec
    (``ctx.profile_dirs``).
    """


@hookspec
def harness_suite_dirs() -> list[pathlib.Path]:
    """Folders holding suite TOML files, so a plugin can ship its own suites.

    :return: existing folders; a suite is found by its file name without ``.toml``.

    Called in: the parent, when ``--suite NAME`` is resolved and in ``harness list suites``.
    """


@hookspec
def harness_case_finished(record: dict[str, Any]) -> None:
    """One case's record has been written: for exporters and live dashboards.

    :param record: exactly the line stored in ``OUT/results.jsonl``, as a dict valid against the
        record JSON Schema (version 4): non-finite numbers are null there, with a note in
        ``reason``, as every reader of the file sees them (``harness.Record.from_json`` turns it
        into the typed record; the fields are listed in docs/plugins.md).

    Called in: the parent, once per case of ``harness run`` and of ``harness controls`` (whose
    records carry ``control``), right after the record is appended. Exceptions are reported as
    warnings.
    """


@hookspec
def harness_run_finished(records: list[dict[str, Any]], out_dir: pathlib.Path) -> None:
    """``harness run`` has finished: for figures across the cases of a run (e.g. a sweep plot).

    :param records: the stored lines (as dicts) of the run's ok records and, with ``--resume``, the earlier ok
        records of the same results file: only those of this plugin's own workloads when it
        provides any (a plugin with no workloads, such as an exporter, receives them all).
    :param out_dir: the run's ``--out`` folder, where such figures go.

    Called in: the parent, once at the end of ``harness run`` (not after ``--dry-run``, not by
    ``harness controls``). Exceptions are reported as warnings.
    """
