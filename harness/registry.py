"""Plugin discovery: a pluggy manager fed by the ``harness.plugins`` entry points.

Each plugin's hooks are called one by one so that a plugin that fails to import,
raises, or returns malformed objects is reported with the reason while the rest work.
"""
from __future__ import annotations

import difflib
import importlib.metadata
import pathlib
from dataclasses import dataclass, field
from typing import Any

import pluggy

from harness import hookspecs
from harness.backend import Backend
from harness.errors import check_interrupted, did_you_mean
from harness.plugin_guard import deadline, describe, guarded, import_deadline_s
from harness.workload import Workload, checked_workload

BUILTIN_DISTRIBUTION = "hpml-harness"


@dataclass(frozen=True)
class Problem:
    """A plugin (or one object of it) that could not be used, and why."""

    source: str
    reason: str


@dataclass
class Registry:
    """Everything the plugins provide, keyed by name, with the source package of each."""

    workloads: dict[str, Workload] = field(default_factory=dict)
    backends: dict[str, Backend] = field(default_factory=dict)
    profile_dirs: list[pathlib.Path] = field(default_factory=list)
    suite_dirs: list[pathlib.Path] = field(default_factory=list)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    manager: pluggy.PluginManager | None = None

    def workload(self, name: str) -> Workload:
        if name not in self.workloads:
            raise did_you_mean("workload", name, self.workloads)
        return self.workloads[name]

    def backend(self, name: str) -> Backend:
        if name not in self.backends:
            raise did_you_mean("backend", name, self.backends)
        return self.backends[name]

    def source(self, kind: str, name: str) -> str:
        return self.sources.get((kind, name), "?")

    def _notify(self, hook: str, per_plugin: Any = None, **kwargs: Any) -> list[Problem]:
        """Call every implementation of a lifecycle hook; a failing one is reported, never fatal.

        ``per_plugin(plugin_name)``, when given, returns extra keyword arguments for one plugin."""
        problems: list[Problem] = []
        if self.manager is None:
            return problems
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            args = dict(kwargs, **(per_plugin(impl.plugin_name) if per_plugin else {}))
            _, exc = guarded(lambda: impl.function(**{k: v for k, v in args.items() if k in impl.argnames}))
            if exc is not None:   # a reporter plugin must not stop a run, whatever it raises
                problems.append(Problem(impl.plugin_name, f"{hook} raised {describe(exc)}"))
        return problems

    def notify_case_finished(self, stored: dict[str, Any]) -> list[Problem]:
        """Hooks receive the line as it was stored (a plain dict, schema version 4): a stable
        contract, the same values (NaN as null, with the note) that readers of the file see."""
        return self._notify("harness_case_finished", record=stored)

    def notify_run_finished(self, records: list[dict[str, Any]], out_dir: pathlib.Path) -> list[Problem]:
        """``records``: stored lines. A plugin that provides workloads receives only their records;
        any other plugin (an exporter, say) receives them all."""
        own = {source for (kind, _), source in self.sources.items() if kind == "workload"}

        def records_for(plugin: str) -> dict[str, Any]:
            mine = [r for r in records if r["workload"]["source"] == plugin] if plugin in own else records
            return {"records": mine}
        return self._notify("harness_run_finished", per_plugin=records_for, out_dir=out_dir)


def _entry_point_plugins(problems: list[Problem], only: set[str] | None) -> list[tuple[str, object]]:
    """Load the entry points of the group (all, or those labelled in ``only``).

    Order is deterministic, so a duplicate name always resolves the same way: the
    harness's own built-in plugins first, then by distribution and entry-point name.
    """
    loaded = []
    seconds = import_deadline_s()      # read (and warned about) here, not where the imports print nothing
    eps = importlib.metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP)
    for ep in sorted(eps, key=_entry_point_order):
        dist = ep.dist.name if ep.dist is not None else "?"
        label = f"{dist}:{ep.name}"
        if only is not None and label not in only:
            continue
        def load(ep: importlib.metadata.EntryPoint = ep) -> object:
            with deadline(seconds):
                return ep.load()
        plugin, exc = guarded(load, quiet=True)   # SystemExit, a hang or 50 MB of printing cost only it
        check_interrupted()     # a Ctrl-C that the plugin's own imports swallowed still stops the command
        if exc is None:
            loaded.append((label, plugin))
        else:
            problems.append(Problem(label, f"failed to import {ep.value}: {describe(exc)}"))
    return loaded


def _entry_point_order(ep: importlib.metadata.EntryPoint) -> tuple[bool, str, str]:
    dist = ep.dist.name if ep.dist is not None else ""
    return (dist != BUILTIN_DISTRIBUTION, dist, ep.name)


def _call(impl: pluggy.HookImpl, problems: list[Problem], hook: str) -> list[Any]:
    result, exc = guarded(impl.function)
    if exc is not None:
        problems.append(Problem(impl.plugin_name, f"{hook}() raised {describe(exc)}"))
        return []
    if result is None:
        return []
    if not isinstance(result, (list, tuple)):
        problems.append(Problem(impl.plugin_name,
                                f"{hook}() must return a list, got {type(result).__name__}"))
        return []
    return list(result)


def _checked(check: Any) -> Any:
    """``check(obj)`` with whatever the plugin's object raises while being read (a property that
    raises, SystemExit from __init__) turned into the reason it is not registered."""
    def safe(obj: Any) -> tuple[Any, str]:
        result, exc = guarded(lambda: check(obj))
        if exc is not None:
            return None, f"reading it raised {describe(exc)}"
        return result
    return safe


def _check_backend(obj: Any) -> tuple[Backend | None, str]:
    if isinstance(obj, type) and issubclass(obj, Backend):
        obj = obj()
    if not isinstance(obj, Backend):
        return None, f"expected a harness.Backend, got {type(obj).__name__}"
    if not isinstance(obj.name, str) or not obj.name:
        return None, "backend has no name"
    return obj, ""


def _check_dir(obj: Any) -> tuple[pathlib.Path | None, str]:
    path = pathlib.Path(obj) if isinstance(obj, (str, pathlib.Path)) else None
    if path is None or not path.is_dir():
        return None, f"expected an existing folder, got {obj!r}"
    return path, ""


def _unknown_hooks(pm: pluggy.PluginManager) -> list[Problem]:
    """A hookimpl whose name is no hook of the harness (``harness_workload`` for
    ``harness_workloads``) would provide nothing without a word: each is its plugin's problem,
    with the closest hook name (pluggy's ``check_pending`` says the same, but raises for the
    first one only and names no fix)."""
    known = sorted(name for name in dir(hookspecs) if name.startswith("harness_"))
    problems = []
    for name, caller in sorted(vars(pm.hook).items()):
        if not isinstance(caller, pluggy.HookCaller) or caller.has_spec():
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        fix = f"did you mean {close[0]!r}?" if close else f"the hooks are {', '.join(known)}"
        for impl in caller.get_hookimpls():
            problems.append(Problem(impl.plugin_name, f"unknown hook {name!r}, so it provides nothing: {fix}"))
    return problems


def build_registry(extra_plugins: list[tuple[str, object]] | None = None,
                   entry_points: bool = True, only: set[str] | None = None) -> Registry:
    """Discover plugins and collect what they provide.

    ``only`` restricts loading to some plugin labels (the worker loads just the plugins of
    its case); ``extra_plugins`` registers (label, plugin) pairs directly, for tests.
    """
    registry = Registry()
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    registry.manager = pm
    plugins = (_entry_point_plugins(registry.problems, only) if entry_points else []) + list(extra_plugins or [])
    for label, plugin in plugins:
        _, exc = guarded(lambda: pm.register(plugin, name=label))   # pluggy validation, double registration
        if exc is not None:
            registry.problems.append(Problem(label, f"cannot register: {describe(exc)}"))
    registry.problems.extend(_unknown_hooks(pm))

    collect = [
        ("harness_workloads", "workload", checked_workload, registry.workloads),
        ("harness_backends", "backend", _check_backend, registry.backends),
    ]
    for hook, kind, check, target in collect:
        # get_hookimpls() lists plugins in registration order: the first registered wins a name.
        for impl in getattr(pm.hook, hook).get_hookimpls():
            for obj in _call(impl, registry.problems, hook):
                item, why = _checked(check)(obj)
                if item is None:
                    registry.problems.append(Problem(impl.plugin_name, why))
                elif item.name in target:
                    first = registry.sources[(kind, item.name)]
                    registry.problems.append(Problem(
                        impl.plugin_name, f"duplicate {kind} name {item.name!r} (already from {first}); ignored"))
                else:
                    target[item.name] = item
                    registry.sources[(kind, item.name)] = impl.plugin_name
    for hook, target in (("harness_hardware_profiles", registry.profile_dirs),
                         ("harness_suite_dirs", registry.suite_dirs)):
        for impl in getattr(pm.hook, hook).get_hookimpls():
            for obj in _call(impl, registry.problems, hook):
                path, why = _check_dir(obj)
                if path is None:
                    registry.problems.append(Problem(impl.plugin_name, f"{hook}: {why}"))
                elif path not in target:
                    target.append(path)
    return registry
