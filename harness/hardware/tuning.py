"""What makes a node's clock move between runs: frequency governor, turbo, SMT, isolated CPUs.

pytest-benchmark and pyperf users chase "noise" that is a powersave governor or turbo boost;
the record keeps these settings next to the numbers, and ``harness info`` / ``harness run``
say when they make timings drift. Read from sysfs only: nothing here changes the machine.
"""
from __future__ import annotations

import pathlib
from typing import Any

SYSFS_CPU = pathlib.Path("/sys/devices/system/cpu")


def _read(path: pathlib.Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _boost(cpu_root: pathlib.Path) -> bool | None:
    """True when turbo/boost may raise the clock: acpi-cpufreq's ``boost`` or intel_pstate's
    ``no_turbo`` (inverted); None when neither is exposed."""
    boost = _read(cpu_root / "cpufreq" / "boost")
    if boost in ("0", "1"):
        return boost == "1"
    no_turbo = _read(cpu_root / "intel_pstate" / "no_turbo")
    if no_turbo in ("0", "1"):
        return no_turbo == "0"
    return None


def tuning(cpu_root: pathlib.Path = SYSFS_CPU) -> dict[str, Any]:
    """{governors, driver, boost, smt, isolated, warnings} of this node."""
    governors = sorted({g for p in cpu_root.glob("cpu[0-9]*/cpufreq/scaling_governor")
                        if (g := _read(p))})
    driver = next((d for p in sorted(cpu_root.glob("cpu[0-9]*/cpufreq/scaling_driver")) if (d := _read(p))), None)
    boost = _boost(cpu_root)
    out: dict[str, Any] = {"governors": governors, "driver": driver, "boost": boost,
                           "smt": _read(cpu_root / "smt" / "control"),
                           "isolated": _read(cpu_root / "isolated") or "", "warnings": []}
    warnings = out["warnings"]
    if not governors:
        warnings.append("no cpufreq governor in sysfs (VM or container?): the clock policy is unknown")
    elif governors != ["performance"]:
        warnings.append(f"cpufreq governor {', '.join(governors)}: the clock follows the load; for stable "
                        "timings use 'performance' (cpupower frequency-set -g performance)")
    if boost:
        warnings.append("turbo boost is on: the clock depends on temperature and the number of busy cores")
    return out
