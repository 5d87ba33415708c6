"""Run the harness on aarch64 or ppc64le under qemu-user emulation and keep its records.

    sudo .venv/bin/python benchmarks/cross_arch.py aarch64 --out results/aarch64
    sudo .venv/bin/python benchmarks/cross_arch.py ppc64le --out results/ppc64le

Why: the code paths that differ per architecture (the CPU description, archspec's names, ISA
flags, profile matching, the OpenBLAS kernel name, the PMPI hook's compile with that system's
``mpicc``, numba) must run somewhere other than x86. Emulation runs them for real on that
architecture's own Python, numpy, OpenBLAS and MPI; only the timings are not the architecture's,
and the records say so (``hardware.emulation``: the interpreter is aarch64/ppc64le while
/proc/cpuinfo describes the x86 host).

What it does (as root; the Debian host needs network to the Debian mirror and PyPI while building):

1. installs ``qemu-user-static debootstrap binfmt-support`` with apt where missing, and enables
   the binfmt handler for the architecture;
2. builds a Debian bookworm root with debootstrap, cached in ``--cache`` (default
   ``~/.cache/hpml-harness/cross``) and rebuilt from nothing when absent or with ``--rebuild``.
   aarch64 gets Python from Debian and the harness's dependencies as PyPI wheels (numpy on
   scipy-openblas, the MPICH wheel); ppc64le, for which PyPI has no numpy/scipy/mpi4py wheels,
   gets them from Debian (Debian's OpenBLAS, mpi4py on Open MPI), as Power sites do;
3. copies this checkout's tracked files into the root and installs the harness there
   (``pip install --no-deps``);
4. runs ``harness info`` and the ``cross-arch`` suite (psgd_svm at 1 and 2 ranks, dpmm,
   cnn_scaling's model mode, roofline with the openblas backend) inside the root, and copies
   ``results.jsonl`` to ``--out``.

It prints the time of each step. Mounts (/proc, /sys, /dev) are undone on exit.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEBIAN = {"aarch64": "arm64", "ppc64le": "ppc64el"}
MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ["python3", "python3-venv", "python3-pip", "gcc", "libc6-dev", "ca-certificates", "git"]
# ppc64le: no PyPI wheels of these, so Debian's builds (the way a Power site's distribution ships them).
PPC_PACKAGES = ["automake", "autoconf", "libtool", "python3-numpy", "python3-scipy", "python3-sklearn", "python3-numba", "python3-mpi4py",
                "libopenmpi-dev", "openmpi-bin", "python3-psutil", "python3-pandas", "python3-jsonschema",
                "python3-pluggy", "python3-rich", "python3-cpuinfo", "python3-threadpoolctl", "python3-matplotlib",
                "libopenblas0-pthread"]
# aarch64: PyPI wheels, as `pip install hpml-harness` would bring them (less asv, pyarrow, torch, tf).
AARCH64_WHEELS = ["numpy", "scipy", "scikit-learn", "numba", "psutil", "pluggy", "py-cpuinfo", "jsonschema",
                  "threadpoolctl", "rich", "pandas", "matplotlib", "mpi4py", "mpich", "archspec"]
CLEAN_ENV = {"PATH": "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "HOME": "/root", "LANG": "C.UTF-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
             "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@contextlib.contextmanager
def step(name: str):
    """Print a step's name, then its duration when the block ends."""
    print(f"== {name}", flush=True)
    t0, failed = time.monotonic(), True
    try:
        yield
        failed = False
    finally:
        print(f"== {name}: {time.monotonic() - t0:.0f} s{' (failed)' if failed else ''}", flush=True)


def sh(*cmd: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    print("  $", " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, check=check)


def host_tools(arch: str) -> None:
    missing = [tool for tool in ("debootstrap", f"qemu-{arch}-static", "update-binfmts") if not shutil.which(tool)]
    if missing:
        sh("apt-get", "install", "-y", "-q", "qemu-user-static", "debootstrap", "binfmt-support",
           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if not pathlib.Path("/proc/sys/fs/binfmt_misc/register").exists():
        sh("mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc")
    handler = pathlib.Path(f"/proc/sys/fs/binfmt_misc/qemu-{arch}")
    if not handler.exists() or "enabled" not in handler.read_text():
        sh("update-binfmts", "--enable", f"qemu-{arch}")


class Root:
    """A debootstrapped root with /proc, /sys and /dev bound in while in use."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.mounted: list[pathlib.Path] = []

    def __enter__(self) -> "Root":
        for name in ("proc", "sys", "dev"):
            target = self.path / name
            target.mkdir(exist_ok=True)
            sh("mount", "--rbind" if name == "dev" else "--bind", f"/{name}", str(target))
            self.mounted.append(target)
        for f in ("/etc/resolv.conf", "/etc/ssl/certs/ca-certificates.crt"):
            if pathlib.Path(f).exists():
                dest = self.path / f.lstrip("/")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
        return self

    def __exit__(self, *exc) -> None:
        for target in reversed(self.mounted):
            subprocess.run(["umount", "-R", "-l", str(target)], check=False)

    def run(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("chroot", str(self.path), "/bin/bash", "-euo", "pipefail", "-c", script, env=CLEAN_ENV, check=check)


def build_root(arch: str, path: pathlib.Path, rebuild: bool) -> None:
    ready = path / ".hpml-harness-ready"
    if ready.exists() and not rebuild:
        print(f"  (cached root {path})")
        return
    if path.exists():
        subprocess.run(["umount", "-R", "-l", *(str(path / n) for n in ("proc", "sys", "dev"))], check=False,
                       capture_output=True)
        shutil.rmtree(path)
    packages = BASE_PACKAGES + (PPC_PACKAGES if arch == "ppc64le" else [])
    with step(f"debootstrap {DEBIAN[arch]} bookworm"):
        sh("debootstrap", f"--arch={DEBIAN[arch]}", "--variant=minbase", f"--include={','.join(packages)}",
           "bookworm", str(path), MIRROR)
    with Root(path) as root, step("Python environment in the root"):
        if arch == "ppc64le":
            root.run("python3 -m venv --system-site-packages /opt/venv && pip install -q archspec")
        else:
            root.run(f"python3 -m venv /opt/venv && pip install -q {' '.join(AARCH64_WHEELS)}")
    ready.write_text(time.strftime("%Y-%m-%dT%H:%M:%S") + "\n")


def install_harness(root: Root) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    src = root.path / "src"
    if src.exists():
        shutil.rmtree(src)
    for name in files.decode().split("\0"):
        if name and (ROOT / name).is_file():
            dest = src / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest)
    root.run("pip install -q \"setuptools>=68\" wheel && cd /src && pip install -q --no-deps --no-build-isolation -e .")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("arch", choices=sorted(DEBIAN), help="the architecture to emulate")
    ap.add_argument("--out", required=True, type=pathlib.Path, help="folder for the records (results.jsonl)")
    ap.add_argument("--cache", type=pathlib.Path, default=pathlib.Path.home() / ".cache" / "hpml-harness" / "cross",
                    help="where the built roots are kept between runs")
    ap.add_argument("--rebuild", action="store_true", help="build the root from nothing even if cached")
    ap.add_argument("--timeout", type=float, default=1800, help="per-case timeout inside the root (s)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("cross_arch.py: needs root (debootstrap, binfmt, chroot); run it with sudo", file=sys.stderr)
        return 2
    if not pathlib.Path("/proc/sys/fs").exists():
        print("cross_arch.py: needs Linux with binfmt_misc", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    path = args.cache / args.arch
    path.parent.mkdir(parents=True, exist_ok=True)
    with step("host tools and binfmt"):
        host_tools(args.arch)
    build_root(args.arch, path, args.rebuild)
    with Root(path) as root:
        with step("install the harness"):
            install_harness(root)
        with step("harness info and the cross-arch suite"):
            root.run("rm -rf /results && harness info")
            root.run(f"harness run --suite cross-arch --timeout {args.timeout:g} --out /results", check=False)
        args.out.mkdir(parents=True, exist_ok=True)
        produced = root.path / "results" / "results.jsonl"
        if not produced.exists():
            print("cross_arch.py: the run wrote no records", file=sys.stderr)
            return 1
        shutil.copyfile(produced, args.out / "results.jsonl")
    print(f"records: {args.out / 'results.jsonl'}; total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
