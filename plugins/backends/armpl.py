"""Arm Performance Libraries: aarch64 only, found through ARMPL_DIR (``module load armpl``)."""
from __future__ import annotations

import ctypes
import os
import pathlib
import platform

from harness_plugins.backends.cblas import Cblas
from harness_plugins.backends.library import BlasLibraryBackend


class ArmplBackend(BlasLibraryBackend):
    name = "armpl"
    description = "Arm Performance Libraries (libarmpl_lp64[_mp].so under ARMPL_DIR)"
    library_env = "HARNESS_ARMPL_LIBRARY"
    marker = "armpl"
    install_hint = "ArmPL needs an aarch64 machine with ArmPL: set ARMPL_DIR or `module load armpl`"

    def find(self) -> pathlib.Path | None:
        if platform.machine() != "aarch64":
            return None
        root = os.environ.get("ARMPL_DIR")
        if not root:
            return None
        for name in ("libarmpl_lp64_mp.so", "libarmpl_lp64.so"):
            path = pathlib.Path(root) / "lib" / name
            if path.is_file():
                return path
        return None

    def available(self) -> tuple[bool, str]:
        if platform.machine() != "aarch64":
            return False, f"{self.install_hint} (this machine is {platform.machine()})"
        return super().available()

    def binding(self, path: pathlib.Path) -> Cblas:
        return Cblas(str(path))

    def version(self, lib: Cblas) -> str | None:
        fn = lib.function("armplversion")
        if fn is None:
            return None
        major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        tag = ctypes.c_char_p()
        fn(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch), ctypes.byref(tag))
        return f"{major.value}.{minor.value}.{patch.value}" + (f" {tag.value.decode()}" if tag.value else "")
