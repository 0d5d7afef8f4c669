"""The base image of the test's build, made without an image registry.

``trisque-test-debian:bookworm``: Debian's python3 and python3-venv
installed by debootstrap from the Debian mirror this machine's apt uses,
then imported with ``docker import``. ``trisque-test-debian-build:bookworm``
adds gcc, libc6-dev and python3-dev (apt-get in a chroot of the first) for
the build stage, which compiles the core with mypyc. The root file systems'
tarballs are kept in the cache directory, so they are made once per cache.

``trisque-test-base`` and ``trisque-test-build-base``: those images plus
``/wheels``, the wheels of trisque's runtime dependencies and of its build
requirements (setuptools, mypy) fetched on the host by pip for CPython 3.11
on manylinux, the Python of Debian bookworm. deploy/Dockerfile then
installs with ``--no-index --find-links /wheels`` and needs no network.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from tests.deploy.engine import Engine, EngineError

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_SUITE = "bookworm"
DEBIAN_PACKAGES = "python3,python3-venv"
# the build stage's: a C compiler and Python's headers for mypyc (setup.py)
DEBIAN_BUILD_PACKAGES = ["gcc", "libc6-dev", "python3-dev"]
DEBIAN_IMAGE = f"trisque-test-debian:{DEBIAN_SUITE}"
DEBIAN_BUILD_IMAGE = f"trisque-test-debian-build:{DEBIAN_SUITE}"
BASE_IMAGE = "trisque-test-base"
BUILD_BASE_IMAGE = "trisque-test-build-base"
# Debian bookworm's python3 is CPython 3.11 on glibc 2.36.
WHEEL_TARGET = ["--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                "--platform", "manylinux2014_x86_64", "--only-binary", ":all:"]
# beside pyproject.toml's build-system requires: pip wheel --no-build-isolation's
BUILD_REQUIREMENTS = ["wheel"]
DEBOOTSTRAP_TIMEOUT_S = 1200.0
PIP_TIMEOUT_S = 600.0


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The URI apt uses for Debian's main archive (sources.list or deb822)."""
    texts = []
    for path in [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]:
        try:
            texts.append(path.read_text(errors="replace"))
        except OSError:
            continue
    for text in texts:
        for uri in re.findall(r"^\s*URIs:\s*(\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return str(uri)
        for uri in re.findall(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+" + DEBIAN_SUITE + r"\s",
                              text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return str(uri)
    return "http://deb.debian.org/debian"


def run_checked(argv: list[str], timeout_s: float) -> None:
    """Run a host command; a failure says what it printed."""
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if result.returncode != 0:
        raise EngineError(f"{' '.join(argv)} exited {result.returncode}:\n"
                          f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def debian_rootfs(cache_dir: Path) -> Path:
    """A tarball of a minimal Debian with python3 (debootstrap, once)."""
    tarball = cache_dir / f"debian-{DEBIAN_SUITE}-rootfs.tar.gz"
    if tarball.exists():
        return tarball
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix="debootstrap-") as work:
        rootfs = Path(work) / "rootfs"
        run_checked(["debootstrap", "--variant=minbase", f"--include={DEBIAN_PACKAGES}",
                     DEBIAN_SUITE, str(rootfs), debian_mirror()], DEBOOTSTRAP_TIMEOUT_S)
        pack(rootfs, tarball)
    return tarball


def debian_build_rootfs(cache_dir: Path) -> Path:
    """debian_rootfs plus a C compiler and Python's headers, by apt-get in a
    chroot of it (once): the same Python, and about a minute where a second
    debootstrap took nearly four."""
    tarball = cache_dir / f"debian-{DEBIAN_SUITE}-build-rootfs.tar.gz"
    if tarball.exists():
        return tarball
    runtime = debian_rootfs(cache_dir)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix="build-rootfs-") as work:
        rootfs = Path(work) / "rootfs"
        rootfs.mkdir()
        run_checked(["tar", "-C", str(rootfs), "--numeric-owner", "-xzf", str(runtime)],
                    DEBOOTSTRAP_TIMEOUT_S)
        # apt looks names up with the host's resolver, then the file is put back
        resolv = rootfs / "etc" / "resolv.conf"
        kept = resolv.read_bytes() if resolv.is_file() and not resolv.is_symlink() else None
        resolv.unlink(missing_ok=True)
        shutil.copyfile("/etc/resolv.conf", resolv)
        apt = ["chroot", str(rootfs), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-qq"]
        run_checked([*apt, "update"], DEBOOTSTRAP_TIMEOUT_S)
        run_checked([*apt, "install", "-y", "--no-install-recommends", *DEBIAN_BUILD_PACKAGES],
                    DEBOOTSTRAP_TIMEOUT_S)
        resolv.unlink()
        if kept is not None:
            resolv.write_bytes(kept)
        pack(rootfs, tarball)
    return tarball


def pack(rootfs: Path, tarball: Path) -> None:
    """The root file system as a tarball for ``docker import``, without
    apt's downloads, lists and caches (of no use in the image)."""
    for leftover in ("var/cache/apt/archives", "var/cache/apt", "var/lib/apt/lists"):
        for path in (rootfs / leftover).glob("*"):
            if path.is_file():
                path.unlink()
    partial = tarball.with_suffix(".partial")
    run_checked(["tar", "-C", str(rootfs), "--numeric-owner", "-I", "gzip -1", "-cf",
                 str(partial), "."], DEBOOTSTRAP_TIMEOUT_S)
    partial.rename(tarball)


def runtime_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    with open(pyproject, "rb") as f:
        pyproject_toml = tomllib.load(f)
    build: list[str] = pyproject_toml["build-system"]["requires"]  # (mypy: setup.py)
    dependencies: list[str] = pyproject_toml["project"]["dependencies"]
    return build + BUILD_REQUIREMENTS + dependencies


def wheelhouse(cache_dir: Path) -> Path:
    """The dependencies' wheels for the image, by what pyproject.toml asks
    for (a changed dependency list fetches a new set)."""
    requirements = runtime_requirements()
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:12]
    context = cache_dir / f"wheelhouse-{key}"
    if not (context / "Dockerfile").exists():  # (written once the wheels are all in)
        shutil.rmtree(context, ignore_errors=True)
        run_checked([sys.executable, "-m", "pip", "download", "--quiet",
                     "--disable-pip-version-check", "--dest", str(context / "wheels"),
                     *WHEEL_TARGET, *requirements], PIP_TIMEOUT_S)
    # (written again each time: the context may be an earlier version's)
    (context / "Dockerfile").write_text("ARG DEBIAN\nFROM ${DEBIAN}\nCOPY wheels /wheels\n")
    return context


def ensure_base_image(engine: Engine) -> None:
    """Import the Debian images if the engine lacks them, then (re)build the
    base images with the wheels: layer cache hits when nothing changed."""
    context = wheelhouse(engine.cache_dir)
    for debian, rootfs, base in ((DEBIAN_IMAGE, debian_rootfs, BASE_IMAGE),
                                 (DEBIAN_BUILD_IMAGE, debian_build_rootfs, BUILD_BASE_IMAGE)):
        if engine.run(["docker", "image", "inspect", debian], check=False).returncode != 0:
            engine.docker("import", str(rootfs(engine.cache_dir)), debian)
        engine.docker("build", "--quiet", "--network", "none", "--build-arg",
                      f"DEBIAN={debian}", "-t", base, str(context))


if __name__ == "__main__":
    # By hand: python -m tests.deploy.base_image  (starts and stops the engine)
    started = Engine().start()
    try:
        ensure_base_image(started)
        print(started.docker("image", "ls"), end="")
    finally:
        started.stop()
    sys.exit(os.EX_OK)
