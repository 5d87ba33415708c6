"""``harness capture``: one self-describing folder of a machine that another site can send in.

A capture holds what a reader needs to trust and compare the machine without asking: ``info.json``
(``harness info --json``: fingerprint, matched profile, libraries, MPI, numerics variables),
``results/results.jsonl`` (the roofline and the suites' records), ``controls/results.jsonl``
(every captured claim judged on its control case, at the size its suite judged it: whether a pass
here could have failed), and ``manifest.json`` (harness
version and commit, the machine's key and label, every workload's version, the command, start
and end, how it ended, the records by status). The
repository's ``gallery/`` keeps one capture per real machine; ``harness report gallery/*`` puts them
side by side.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import pathlib
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.commands.common import console, err_console, registry
from harness.commands.machine_document import info_document
from harness.commands.options import add_machine_name_option
from harness.commands.running import run
from harness.hardware.identity import identity, profile_relation
from harness.work_identity import workload_version
from harness.output.atomic import write_atomic
from harness.errors import Interrupted, UsageError
from harness.software import git_info
from harness.request import RunRequest
from harness.results.store import RESULTS_NAME, read_records

if TYPE_CHECKING:
    from harness.plan import Case

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA = "hpml-harness/capture-v1"
README_TEXT = """\
A machine captured by `harness capture` (hpml-harness).

  manifest.json          harness version and commit, the command, start and end, how it ended,
                         the machine in one line, the records by status
  info.json              `harness info --json` on this machine: fingerprint, matched hardware
                         profile, backends and the libraries they found, MPI, numerics variables
  results/results.jsonl  one record per case (the roofline and the suites named in the manifest)
  controls/results.jsonl every claim of those cases judged on its control case (harness controls),
                         at the size the suite judged it

Compare it with other machines: harness report THIS_FOLDER OTHER_FOLDER --out report.html
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "capture", help="run info, the roofline and a suite into one folder another site can send in",
        description="Capture this machine: write OUT/info.json (harness info), OUT/results/ (the roofline "
                    "workload and each --suite) and OUT/manifest.json (harness version, commit, command, "
                    "how it ended). Rerunning into the same folder on the same machine resumes it.")
    p.add_argument("out", metavar="OUT", help="capture folder (created; a capture of this machine resumes)")
    p.add_argument("--suite", action="append", metavar="S",
                   help="suite name or TOML path to run; repeatable (default: all)")
    p.add_argument("--backend", help="backend(s) to request for every case, as `harness run --backend`")
    p.add_argument("--timeout", type=float, help="seconds before a case is killed (default: the suites')")
    p.add_argument("--note", default="", help="free text kept in the manifest (where the machine is, why)")
    p.add_argument("--no-controls", action="store_true",
                   help="do not run the claims' controls after the suites (by default every captured workload's "
                        "controls run at the size its suite ran it, into OUT/controls: `harness controls`)")
    add_machine_name_option(p)
    p.set_defaults(func=main)


def workload_versions() -> dict[str, str]:
    """Every registered workload's version as the code here makes it (harness.work_identity.workload_version):
    the manifest keeps them, and a test compares a gallery capture's with the code's."""
    reg = registry()
    return {name: workload_version(reg.workload(name))[0] for name in sorted(reg.workloads)}


def _check_target(out: pathlib.Path, me: dict[str, Any]) -> dict[str, Any] | None:
    """The earlier manifest when OUT is a capture of this machine (resume), None when OUT is new or
    empty; anything else is refused before a byte is written."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"capture folder {out}: is a file; give a new folder")
    if not out.exists() or not any(out.iterdir()):
        return None
    manifest = out / MANIFEST_NAME
    if not manifest.is_file():
        raise UsageError(f"capture folder {out}: exists and is not a capture (no {MANIFEST_NAME}); "
                         "give a new or empty folder")
    try:
        earlier = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"capture folder {out}: {MANIFEST_NAME} is unreadable ({exc}); "
                         "give a new folder (nothing there was changed)") from None
    if not isinstance(earlier, dict) or "machine" not in earlier:
        what = ("lacks 'machine'" if isinstance(earlier, dict)
                else f"is a JSON {type(earlier).__name__}, not an object")
        raise UsageError(f"capture folder {out}: {MANIFEST_NAME} {what}, so it is no capture manifest; "
                         "give a new folder (nothing there was changed)")
    earlier_line, earlier_key = earlier["machine"], earlier.get("machine_key")   # no key: an older capture
    if earlier_key != me["key"]:
        raise UsageError(f"capture folder {out}: holds another machine ({earlier_line}, key {earlier_key}); "
                         f"this one is {me['label']} (key {me['key']}). Give a new folder")
    return earlier


CAPTURE_ENTRIES = (MANIFEST_NAME, "info.json", "README.txt", "results", "controls")


def _check_entries(out: pathlib.Path) -> None:
    """A capture writes only inside its folder: an entry it writes that is a link (a planted
    ``results`` -> elsewhere) is refused before anything is written."""
    for name in CAPTURE_ENTRIES:
        path = out / name
        if path.is_symlink():
            raise UsageError(f"capture folder {out}: {name} is a symbolic link (to {os.readlink(path)}); "
                             "a capture writes only inside its own folder: remove the link or give a new folder")
    for folder in ("results", "controls"):
        if (out / folder).exists() and not (out / folder).is_dir():
            raise UsageError(f"capture folder {out}: {folder} is not a folder; remove it or give a new folder")


def _make_folder(out: pathlib.Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results").mkdir(exist_ok=True)
    except OSError as exc:
        raise UsageError(f"capture folder {out}: cannot create it ({exc.strerror}); "
                         "give a folder in a writable place") from None


def _write_json(path: pathlib.Path, doc: dict[str, Any]) -> None:
    """Whole or not at all: a capture interrupted while writing keeps its previous manifest."""
    write_atomic(path, json.dumps(doc, indent=2, default=str) + "\n")


def _request(what: dict[str, str], results: pathlib.Path, args: argparse.Namespace) -> RunRequest:
    """The run of one suite (or the roofline) into the capture's results, resuming what is there."""
    return RunRequest(**what, out=str(results), backend=args.backend, timeout=args.timeout,
                      machine_name=args.machine_name, resume=True)


def _suite_cases(suites: list[str], args: argparse.Namespace) -> list[Case]:
    """The cases the suites plan, in order; bad suites raise here, before anything runs."""
    return [case for suite in suites
            for case in _request({"suite": suite}, pathlib.Path("unused"), args).cases(registry())]


def _control_groups(cases: list[Case]) -> list[tuple[str, list[str]]]:
    """(size, workloads) whose controls the capture runs: each workload of the suites that declares
    a control, at each size a suite ran it (the claims' verdicts were made there)."""
    reg = registry()
    sizes: dict[str, set[str]] = {}
    for case in cases:
        if any(c.control is not None for c in reg.workload(case.workload).claims):
            sizes.setdefault(case.size, set()).add(case.workload)
    return [(size, sorted(names)) for size, names in sorted(sizes.items())]


def _run_controls(size: str, names: list[str], out: pathlib.Path, args: argparse.Namespace) -> int:
    """``harness controls --size SIZE --workload NAMES --out OUT``, as that command runs it."""
    from harness.commands.controls import ControlsRequest, main as controls

    return controls(ControlsRequest(workload=",".join(names), size=size, out=str(out), backend=args.backend,
                                    **({"timeout": args.timeout} if args.timeout else {})))


def _count(results: pathlib.Path) -> dict[str, int]:
    path = results / RESULTS_NAME
    if not path.is_file():
        return {}
    records, _ = read_records(path)
    return dict(Counter(r.status for r in records))


def main(args: argparse.Namespace) -> int:
    out = pathlib.Path(args.out)
    suites = args.suite or ["all"]
    cases = _suite_cases(suites, args)
    runs = [] if any(c.workload == "roofline" for c in cases) else [{"workload": "roofline"}]   # the suite has one
    runs += [{"suite": s} for s in suites]
    control_groups = [] if args.no_controls else _control_groups(cases)
    info, _ = info_document([])
    me = identity(info["hardware"], args.machine_name)
    if out.is_dir():
        _check_entries(out)
    earlier = _check_target(out, me)
    _make_folder(out)
    results = out / "results"
    manifest: dict[str, Any] = {
        "schema": MANIFEST_SCHEMA, "machine": me["label"], "machine_key": me["key"], "machine_name": me["name"],
        "hostname": info["hardware"].get("hostname"),
        "profile": (info.get("profile") or {}).get("name"), "profile_relation": profile_relation(info.get("profile") or {}),
        "workload_versions": workload_versions(),
        "harness_version": __version__, **{f"harness_{k}": v for k, v in git_info().items()},
        "command": ["harness", *sys.argv[1:]] if sys.argv and sys.argv[0].endswith("harness") else None,
        "suites": suites, "backend": args.backend, "note": args.note,
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "finished": None, "ended": "running", "runs": [],
        "earlier": [{k: earlier.get(k) for k in ("started", "finished", "ended", "harness_commit")}]
        + list(earlier.get("earlier") or []) if earlier else [],
    }
    _write_json(out / MANIFEST_NAME, manifest)
    ended, code = "interrupted", 130
    said = ""
    try:
        _write_json(out / "info.json", info)
        write_atomic(out / "README.txt", README_TEXT)
        for what in runs:
            said = " ".join(f"--{k} {v}" for k, v in what.items())
            console.print(f"[bold]capture:[/bold] harness run {said} -> {results}")
            run_code = run(_request(what, results, args))
            manifest["runs"].append({"what": said, "exit": run_code})
            _write_json(out / MANIFEST_NAME, manifest)
        for size, names in control_groups:   # exit 1 there: a claim not caught by its control
            said = f"controls --size {size} --workload {','.join(names)}"
            console.print(f"[bold]capture:[/bold] harness {said} -> {out / 'controls'}")
            manifest["runs"].append({"what": said, "exit": _run_controls(size, names, out / "controls", args)})
            _write_json(out / MANIFEST_NAME, manifest)
        code = max((r["exit"] for r in manifest["runs"]), default=0)
        ended = "complete"
    except Interrupted as stop:
        ended, code = f"interrupted by {stop.name}", 128 + stop.signum
        raise
    except (UsageError, OSError) as exc:      # a full or read-only disk mid-capture: said, with the run
        ended, code = f"stopped: {str(exc)[:300]}", 2
        manifest["runs"].append({"what": said, "exit": 2, "error": str(exc)[:300]})
        raise
    finally:
        manifest.update(finished=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                        ended=ended, records=_count(results))
        try:
            _write_json(out / MANIFEST_NAME, manifest)
        except UsageError as exc:   # the disk that stopped the capture may refuse the manifest too
            err_console.print(f"note: the manifest could not be updated ({exc})", markup=False)
        console.print(f"capture {ended}: {out} ({sum(manifest['records'].values())} records; "
                      f"manifest {out / MANIFEST_NAME})", markup=False)
    return code
