"""What makes a node's clock move between runs: frequency governor, turbo, SMT, isolated CPUs.

pytest-benchmark and pyperf users chase "noise" that is a powersave governor or turbo boost;
the record keeps these settings next to the numbers, and ``harness info`` / ``harness run``
say when they make timings drift. Read from sysfs only: nothing here changes the machine.
"""
from __future__ import annotations

import pathlib
from typing import Any

from harness.hardware.sysfs import SYSFS_CPU, read_value


def _boost(cpu_root: pathlib.Path) -> bool | None:
    """True when turbo/boost may raise the clock: acpi-cpufreq's ``boost`` or intel_pstate's
    ``no_turbo`` (inverted); None when neither is exposed."""
    boost = read_value(cpu_root / "cpufreq" / "boost")
    if boost in ("0", "1"):
        return boost == "1"
    no_turbo = read_value(cpu_root / "intel_pstate" / "no_turbo")
    if no_turbo in ("0", "1"):
        return no_turbo == "0"
    return None


def tuning(cpu_root: pathlib.Path = SYSFS_CPU) -> dict[str, Any]:
    """{governors, driver, boost, smt, isolated, warnings} of this node."""
    governors = sorted({g for p in cpu_root.glob("cpu[0-9]*/cpufreq/scaling_governor")
                        if (g := read_value(p))})
    driver = next((d for p in sorted(cpu_root.glob("cpu[0-9]*/cpufreq/scaling_driver")) if (d := read_value(p))), None)
    boost = _boost(cpu_root)
    out: dict[str, Any] = {"governors": governors, "driver": driver, "boost": boost,
                           "smt": read_value(cpu_root / "smt" / "control"),
                           "isolated": read_value(cpu_root / "isolated") or "", "warnings": []}
    warnings = out["warnings"]
    if not governors:
        warnings.append("no cpufreq governor in sysfs (VM or container?): the clock policy is unknown")
    elif governors != ["performance"]:
        warnings.append(f"cpufreq governor {', '.join(governors)}: the clock follows the load; for stable "
                        "timings use 'performance' (cpupower frequency-set -g performance)")
    if boost:
        warnings.append("turbo boost is on: the clock depends on temperature and the number of busy cores")
    return out
