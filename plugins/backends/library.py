"""What the CPU-BLAS backends share: locate a library file, bind it once, verify its owner."""
from __future__ import annotations

import functools
import os
import pathlib
from typing import Any

from harness import Backend, Verification
from harness_plugins.backends import evidence
from harness_plugins.backends.cblas import Cblas


@functools.lru_cache(maxsize=1)
def flexiblas_pool() -> dict[str, Any] | None:
    """threadpoolctl's FlexiBLAS entry when numpy is linked to FlexiBLAS (EasyBuild, Fedora), else None."""
    try:
        import numpy  # noqa: F401 - loads numpy's BLAS so threadpoolctl can see it
        import threadpoolctl
    except ImportError:
        return None
    return next((p for p in threadpoolctl.threadpool_info() if p.get("internal_api") == "flexiblas"), None)


class BlasLibraryBackend(Backend):
    """A backend that is one BLAS library file, called directly through CBLAS.

    Subclasses give ``library_env`` (a variable that points at the file, to override the
    search), ``marker`` (a substring the real library's file name must contain), and
    ``find()``/``binding()``/``version()``.
    """

    library_env = ""
    marker = ""
    install_hint = ""

    def find(self) -> pathlib.Path | None:
        """The library file to use: ``library_env`` if set, else the backend's search."""
        raise NotImplementedError

    def library_path(self) -> pathlib.Path | None:
        override = os.environ.get(self.library_env) if self.library_env else None
        if override:
            path = pathlib.Path(override)
            return path if path.is_file() else None
        return self.find()

    def available(self) -> tuple[bool, str]:
        path = self.library_path()
        if path is None:
            where = os.environ.get(self.library_env)
            if where:
                return False, f"{self.library_env}={where} is not a file"
            return False, self.install_hint
        return True, ""

    def frameworks(self) -> tuple[str, ...]:
        out = ("blas",) if self.library_path() is not None else ()
        return out + (("numpy",) if self.flexiblas_name() else ())

    def flexiblas_name(self) -> str | None:
        """The FlexiBLAS backend name for this library when numpy goes through FlexiBLAS and
        FlexiBLAS offers it (then numpy is driven by setting FLEXIBLAS), else None."""
        pool = flexiblas_pool()
        if pool is None:
            return None
        names = [str(n) for n in pool.get("available_backends", []) + pool.get("loaded_backends", [])]
        return next((n for n in names if self.name.lower() in n.lower()), None)

    def environment(self, threads: int) -> dict[str, str]:
        name = self.flexiblas_name()
        return {"FLEXIBLAS": name} if name else {}

    def binding(self, path: pathlib.Path) -> Cblas:
        return Cblas(str(path))

    def blas(self) -> Cblas | None:
        """The binding, loaded on first use (a workload that never asks never loads the library)."""
        if getattr(self, "_binding", None) is None:
            path = self.library_path()
            self._binding = self.binding(path) if path is not None else None
        return self._binding

    def version(self, lib: Cblas) -> str | None:
        return None

    def describe(self) -> dict[str, Any]:
        """Library file, its version call and kernel warnings, loaded here (for `harness info` only)."""
        path = self.library_path()
        if path is None:
            return {}
        try:
            lib = self.binding(path)
        except (OSError, RuntimeError) as exc:
            return {"library": str(path), "version": None, "warnings": [f"cannot load: {exc}"]}
        return {"library": str(path), "version": self.version(lib),
                "warnings": evidence.kernel_warning(self.kernel(lib), self.name)}

    def kernel(self, lib: Cblas) -> str | None:
        return None

    def extra_checks(self, ev: dict[str, Any]) -> tuple[list[str], list[str]]:
        """(problems, warnings) from framework-level evidence, e.g. torch's BLAS."""
        return [], []

    def verify(self) -> Verification:
        ev: dict[str, Any] = evidence.common()
        problems: list[str] = []
        warnings: list[str] = []
        lib_name = ""
        lib = getattr(self, "_binding", None)
        bound = lib is not None
        if bound:
            owner = lib.owner()
            version, kernel = self.version(lib), self.kernel(lib)
            ev["blas_binding"] = {"path": lib.path, "gemm_owner": owner, "version": version, "kernel": kernel}
            owner_file = (owner.get("file") or "").lower()
            if self.marker not in pathlib.Path(owner_file).name:
                problems.append(f"the GEMM called lives in {owner.get('file')!r}, not in a {self.name} library")
            if version is None:
                problems.append(f"{lib.path} has no {self.name} version call: it is not {self.name}")
            warnings += evidence.kernel_warning(kernel, self.name)
            lib_name = f"{self.name} {version or '?'} ({owner.get('file')})"
        flexi = next((p for p in ev["threadpool_info"] if p.get("internal_api") == "flexiblas"), None)
        if flexi is not None and os.environ.get("FLEXIBLAS"):
            current = str(flexi.get("current_backend", ""))
            ev["flexiblas"] = {k: flexi.get(k) for k in ("current_backend", "available_backends",
                                                         "loaded_backends", "filepath")}
            if self.name.lower() not in current.lower():
                problems.append(f"FlexiBLAS runs {current!r}, not {self.name} (FLEXIBLAS={os.environ['FLEXIBLAS']}): "
                                "an unknown backend name makes FlexiBLAS fall back silently")
            else:
                ev["_framework_ok"] = True
        more_problems, more_warnings = self.extra_checks(ev)
        problems += more_problems
        warnings += more_warnings
        if not bound and not more_problems and not ev.get("_framework_ok"):
            problems.append(f"the workload never called {self.name} (no BLAS binding used, no framework "
                            "evidence): nothing proves this library ran")
        ev.pop("_framework_ok", None)
        return Verification(ok=not problems, evidence=ev, warnings=sorted(set(warnings)),
                            reason="; ".join(problems), library=lib_name or ev.get("_library", ""))
