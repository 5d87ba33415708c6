"""The peaks of the machine that ran, for the cores a case used: a profile's only for its own SKU.

Where the machine matched a CPU profile exactly (its model regex, :func:`~harness.hardware.identity.exact_profile`),
the profile's whole-node peak is scaled to the cores used (``source: profile``). Otherwise the
peak is **derived** from the machine's own core and clock: cores used x GHz x fp64 flop/cycle of
its core (the table below, with its sources). The GHz is the clock the cores were measured to
run at (harness.hardware.clock, recorded as ``cpu.measured_clock``); records made before it was
measured have only the reported clock, which a VM gives as its nominal or TSC clock, not the
turbo clock: a measured rate above the derived peak says the peak is wrong (:data:`IMPOSSIBLE`),
never that the machine beat its peak. A profile matched only by family or
microarchitecture (another SKU, another node) lends nothing.
"""
from __future__ import annotations

from typing import Any

from harness.hardware.identity import core_name, exact_profile

# fp64 flop per cycle per core (FMA = 2 flops x lanes x FMA units), by core name (archspec names;
# "+AMX" is stripped: AMX adds no fp64). Sources: Intel 64 and IA-32 Architectures Optimization
# Reference Manual (Skylake-SP/Ice Lake/Sapphire Rapids server cores: 2 x 512-bit FMA; Haswell/
# Broadwell: 2 x 256-bit FMA); AMD Software Optimization Guides for families 17h/19h/1Ah (Zen 2/3:
# 2 x 256-bit FMA; Zen 4: AVX-512 on 2 x 256-bit FMA; Zen 5 server: 2 x 512-bit FMA); Marvell
# ThunderX2 CN99xx brief (2 x 128-bit FMA); IBM POWER9/Power10 processor user manuals (VSX FMA
# pipes per SMT4 core); Arm Neoverse V2 TRM (4 x 128-bit FMA); Fujitsu A64FX microarchitecture
# manual (2 x 512-bit SVE FMA). A core not listed has no derived peak (said, not guessed).
FP64_FLOPS_PER_CYCLE: dict[str, tuple[float, str]] = {
    "haswell": (16, "2 x 256-bit FMA (Intel optimization manual)"),
    "broadwell": (16, "2 x 256-bit FMA (Intel optimization manual)"),
    "skylake_avx512": (32, "2 x 512-bit FMA (Intel optimization manual; Gold 5xxx/Silver have 1: half)"),
    "cascadelake": (32, "2 x 512-bit FMA (Intel optimization manual)"),
    "icelake": (32, "2 x 512-bit FMA on server parts (Intel optimization manual)"),
    "sapphirerapids": (32, "2 x 512-bit FMA (Intel optimization manual)"),
    "emeraldrapids": (32, "2 x 512-bit FMA (Intel optimization manual)"),
    "graniterapids": (32, "2 x 512-bit FMA (Intel optimization manual)"),
    "zen2": (16, "2 x 256-bit FMA (AMD family 17h optimization guide)"),
    "zen3": (16, "2 x 256-bit FMA (AMD family 19h optimization guide)"),
    "zen4": (16, "AVX-512 executed on 2 x 256-bit FMA (AMD family 19h optimization guide)"),
    "zen5": (32, "2 x 512-bit FMA on EPYC 9005 (AMD family 1Ah optimization guide)"),
    "thunderx2": (8, "2 x 128-bit FMA (Marvell ThunderX2 CN99xx brief)"),
    "power9le": (8, "2 x 128-bit VSX FMA per SMT4 core (IBM POWER9 processor user manual)"),
    "power10le": (16, "4 x 128-bit VSX FMA per SMT4 core (IBM Power10 processor user manual)"),
    "neoverse_v2": (16, "4 x 128-bit FMA (Arm Neoverse V2 technical reference manual)"),
    "a64fx": (32, "2 x 512-bit SVE FMA (Fujitsu A64FX microarchitecture manual)"),
}
# A fraction of peak above this is not printed: the peak is wrong (a turbo clock above the one
# reported, or a wrong table row), and the record and report say so instead.
IMPOSSIBLE = 1.05


def _core_row(cpu: dict[str, Any]) -> tuple[str, tuple[float, str] | None]:
    core, _ = core_name(cpu)
    return core, FP64_FLOPS_PER_CYCLE.get(core.removesuffix("+AMX"))


def machine_peaks(hardware: dict[str, Any], profile: dict[str, Any], profile_data: dict[str, Any],
                  cores: int | None = None) -> dict[str, Any]:
    """The CPU peaks for ``cores`` (default: every usable CPU): {"fp64_gflops", "fp32_gflops",
    "bandwidth_gbs" (profile only), "source": "profile"|"derived", "how": text} or
    {"source": None, "how": why there is none}."""
    cpu = hardware.get("cpu") or {}
    cores = cores or cpu.get("usable_cpus") or cpu.get("logical_cpus") or 1
    if (hardware.get("emulation") or {}).get("emulated"):
        return {"source": None, "how": "emulated: the host's peaks are not this architecture's"}
    if exact_profile(profile) and profile_data.get("kind") == "cpu-node":
        node = profile_data.get("cpu", {}).get("cores")
        share = min(1.0, cores / node) if node else 1.0
        peak = profile_data.get("peak") or {}
        fp64 = peak.get("fp64_gflops")
        if fp64:
            bw = (profile_data.get("memory") or {}).get("bandwidth_gbs")
            return {"fp64_gflops": fp64 * share, "fp32_gflops": peak.get("fp32_gflops", 2 * fp64) * share,
                    "bandwidth_gbs": bw * share if bw else None, "source": "profile",
                    "how": f"profile {profile['name']} (this SKU), {cores} of {node or '?'} cores"}
    core, row = _core_row(cpu)
    mhz = cpu.get("max_mhz")
    measured = (cpu.get("measured_clock") or {}).get("ghz")
    if row is None:
        return {"source": None, "how": f"no flop/cycle figure for core {core!r} (harness.hardware.peaks)"}
    reported = f"{mhz / 1000:.2f} GHz" if isinstance(mhz, (int, float)) and mhz > 0 else "none"
    if isinstance(measured, (int, float)) and measured > 0:
        ghz, kind, clock = float(measured), "measured", f"{measured:.2f} GHz (measured; reported {reported})"
    elif isinstance(mhz, (int, float)) and mhz > 0:
        ghz, kind, clock = mhz / 1000, "reported", f"{mhz / 1000:.2f} GHz (reported)"
    else:
        return {"source": None, "how": "the clock is neither measured nor reported"}
    per_cycle, source = row
    fp64 = cores * ghz * per_cycle
    return {"fp64_gflops": fp64, "fp32_gflops": 2 * fp64, "bandwidth_gbs": None, "source": "derived",
            "clock": kind,
            "how": f"derived: {cores} cores x {clock} x {per_cycle:g} fp64 flop/cycle ({core}: {source})"}


def fraction_or_problem(measured: float, peak: float | None, what: str = "peak") -> tuple[float | None, str]:
    """(measured / peak, '') when plausible; (None, why the peak is wrong) above :data:`IMPOSSIBLE`."""
    if not peak:
        return None, ""
    fraction = measured / peak
    if fraction > IMPOSSIBLE:
        return None, (f"measured {measured:.4g} is {fraction:.2f}x the {what} {peak:.4g}: that {what} is wrong "
                      "for this machine (a clock above the one reported, or a wrong flop/cycle figure); "
                      "no fraction is given")
    return fraction, ""
