"""Test images for the ``docker`` backend, built offline (no registry is reachable in CI).

- ``BUSYBOX``: ``FROM scratch`` with a static busybox and its applets, for shell-only ops.
- ``PYTHON``: the same, plus this test session's own interpreter and standard library (and the
  shared libraries they load) at their own paths, ``python``/``python3`` on ``PATH``: a
  Python image in seconds. (A Debian root file system made by ``debootstrap --variant=minbase
  --include=python3`` took over two minutes to download and unpack on a CI-sized machine.)

Each is imported once (``podman import``) and kept by its tag, so a machine builds it once.
Podman runs as root here with ``runc`` and no default ulimits (`containers_conf`): crun fails
on some kernels' cgroup mode, and podman's default ulimits can exceed the hard limits.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

BUSYBOX = "localhost/polyaxon-prefect-test/busybox:1"
PYTHON = f"localhost/polyaxon-prefect-test/python:{sys.version_info[0]}.{sys.version_info[1]}-5"
PYTHON_NUMPY = PYTHON.replace("/python:", "/python-numpy:")
_APPLETS = ("sh", "echo", "cat", "ls", "sleep", "env", "printf", "id", "test", "true", "hostname")
_SKIP = re.compile(
    r"/(test|tests|idlelib|tkinter|turtledemo|ensurepip|site-packages|__pycache__)(/|$)"
)


def containers_conf(folder: Path) -> Path:
    """A ``containers.conf`` for hosts like CI's: ``runc``, no default ulimits."""
    path = folder / "containers.conf"
    path.write_text('[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n')
    return path


def podman_problem() -> str | None:
    """None when podman runs a container here; else why not (the tests' skip reason)."""
    if shutil.which("podman") is None:
        return "podman is not installed (`.ci/run` installs Debian's podman and runc)"
    if shutil.which("busybox") is None:
        return "busybox is not installed (Debian's busybox-static)"
    try:
        ensure_busybox()
        done = _podman("run", "--rm", BUSYBOX, "/bin/true", check=False, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"podman cannot build the test image: {exc}"
    if done.returncode != 0:
        return f"podman cannot run a container here: {done.stderr.strip()[-300:]}"
    return None


def _podman(
    *args: str, check: bool = True, timeout: float = 300, **kw: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
        **kw,  # type: ignore[arg-type]
    )


def _exists(tag: str) -> bool:
    return _podman("image", "exists", tag, check=False).returncode == 0


def _busybox_members(tar: tarfile.TarFile) -> None:
    busybox = Path(shutil.which("busybox") or "/bin/busybox").resolve()
    tar.add(busybox, "bin/busybox")
    for applet in _APPLETS:
        link = tarfile.TarInfo(f"bin/{applet}")
        link.type, link.linkname = tarfile.SYMTYPE, "busybox"
        tar.addfile(link)
    for folder in ("tmp", "etc", "root"):
        info = tarfile.TarInfo(folder)
        info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
        tar.addfile(info)


def _import(tag: str, build: object, folder: Path) -> None:
    archive = folder / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        build(tar)  # type: ignore[operator]
    _podman(
        "import", "--quiet", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin", str(archive), tag
    )
    archive.unlink()


def ensure_busybox(folder: Path | None = None) -> str:
    if not _exists(BUSYBOX):
        _import(BUSYBOX, _busybox_members, folder or Path(os.environ.get("TMPDIR", "/tmp")))
    return BUSYBOX


def _libraries(files: list[Path]) -> set[Path]:
    """The shared libraries ``files`` load (as ``ldd`` resolves them on this machine)."""
    found: set[Path] = set()
    for file in files:
        done = subprocess.run(["ldd", str(file)], capture_output=True, text=True, check=False)
        for match in re.finditer(r"(/\S+\.so[^\s]*)", done.stdout):
            found.add(Path(match.group(1)))
    return found


def _python_members(tar: tarfile.TarFile) -> None:
    _busybox_members(tar)
    executable = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}  # not a venv's
    stdlib = Path(sysconfig.get_path("stdlib", vars=base)).resolve()
    dynload = Path(sysconfig.get_path("platstdlib", vars=base)).resolve() / "lib-dynload"
    tar.add(executable, str(executable).lstrip("/"))
    for name in ("python", "python3"):
        link = tarfile.TarInfo(f"usr/local/bin/{name}")
        link.type, link.linkname = tarfile.SYMTYPE, str(executable)
        tar.addfile(link)
    tar.add(
        stdlib, str(stdlib).lstrip("/"), filter=lambda m: None if _SKIP.search("/" + m.name) else m
    )
    if dynload.is_dir() and not dynload.is_relative_to(stdlib):
        tar.add(dynload, str(dynload).lstrip("/"))
    for folder in ("lib", "lib64"):  # merged /usr, as Debian's: one copy of each library
        link = tarfile.TarInfo(folder)
        link.type, link.linkname = tarfile.SYMTYPE, f"usr/{folder}"
        tar.addfile(link)
    _add_libraries(tar, [executable, *dynload.glob("*.so")])


def _add_libraries(tar: tarfile.TarFile, files: list[Path]) -> None:
    """The shared libraries ``files`` load, in merged /usr, each once."""
    added = set(tar.getnames())
    for library in _libraries(files):
        name = os.path.normpath(library).lstrip("/")
        name = f"usr/{name}" if name.startswith(("lib/", "lib64/")) else name
        if name not in added:
            added.add(name)
            tar.add(library.resolve(), name)


def _numpy_members(tar: tarfile.TarFile) -> None:
    import numpy

    _python_members(tar)
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    site = Path(sysconfig.get_path("purelib", vars=base))
    package = Path(numpy.__file__).resolve().parent
    filtered = lambda m: None if "/__pycache__" in m.name or "/tests/" in m.name else m  # noqa: E731
    tar.add(package, str(site / "numpy").lstrip("/"), filter=filtered)
    libs = package.parent / "numpy.libs"
    if libs.is_dir():
        tar.add(libs, str(site / "numpy.libs").lstrip("/"))
    _add_libraries(tar, list(package.rglob("*.so")))


def ensure_python_numpy(folder: Path | None = None) -> str:
    """The Python image plus this session's numpy (the quick-start's model needs it)."""
    if not _exists(PYTHON_NUMPY):
        _import(PYTHON_NUMPY, _numpy_members, folder or Path(os.environ.get("TMPDIR", "/tmp")))
    return PYTHON_NUMPY


def ensure_python(folder: Path | None = None) -> str:
    if not _exists(PYTHON):
        _import(PYTHON, _python_members, folder or Path(os.environ.get("TMPDIR", "/tmp")))
    return PYTHON
