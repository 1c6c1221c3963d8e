"""Runtimes: one definition per job environment, built once into a root filesystem.

Why: a job must see the same interpreter and packages whichever backend runs it, or the same
trajectory gets different rewards (a mesh script using ``manifold3d`` passed on the host and
failed in Docker; with a venv under ``/tmp`` the local backend hid numpy and scored 10/10
``fail``). So a runtime is *data*: ``sandbox/images/<name>/runtime.toml`` pins the Debian
packages and the wheels, and says how to check the result. From it:

1. ``build_rootfs`` copies the debootstrapped Debian base (the same ``debootstrap --variant
   =minbase`` from the host's mirror the images always used), installs the apt packages and
   the pinned wheels inside it under bubblewrap (``--no-index --no-deps``: the host's pip
   downloads exactly the pinned files, containers never reach PyPI), checks every pin, and
   renames the folder into the cache by its input hash (``<cache>/rootfs/<name>-<hash>``).
2. the local backend runs its runner under bubblewrap with that folder, read-only, as ``/``;
3. the Docker image is ``docker import`` of the same folder, tagged by the same hash.

So both backends run bit-identical files, and the host's venv is never visible to a job.

``runtime.toml``::

    [runtime]
    description = "..."
    python = "/usr/bin/python3"     # the interpreter jobs call python3 (and the runner uses)
    python_version = "3.11"         # the wheels' CPython tag
    venv = "/opt/venv"              # optional: wheels go into a venv there (bin first on PATH)
    apt = ["python3", ...]          # Debian packages
    wheels = ["numpy==2.3.5", ...]  # every distribution, pinned, dependencies included
    npm = ["typescript@5.9.3", ...] # optional: npm packages, pinned, dependencies included
    imports = ["numpy", ...]        # modules that must import
    preload = "preload.py"          # optional: run once in the runner's zygote (warm imports)
    overhead_mb = 512               # optional: the zygote's memory, added to a container limit
    [runtime.env]                   # extra job environment
    KEY = "value"
    [runtime.commands]              # optional: tools that must run (a toolchain's version)
    gcc = { argv = ["gcc", "--version"], expect = "12.2" }
    # and, in [runtime]:
    setup = "setup.sh"              # optional: a script in the folder, run last in the build

``npm`` packages are fetched the way wheels are: the host's ``npm pack`` downloads exactly the
pinned tarballs (the registry's integrity check included; containers never reach the registry)
and the build unpacks each into ``/opt/npm/node_modules/<name>`` without running any of its
install scripts. There is no resolver: list every package a package needs (``@types/node``
needs ``undici-types``), as for wheels. Jobs ``require`` them by that absolute path.

``setup`` runs as root with ``/bin/sh`` inside the root filesystem being built (after apt and
pip, before the check), with the definition folder read-only at ``/tmp/runtime``. It is for
trusted artifacts that every job would otherwise rebuild: precompiled headers, compiled helper
libraries. It runs once per definition hash (the folder's files are in the hash), so its output
is as reproducible as the packages, and it lands in the read-only root no job can write.

Each ``commands`` entry is run in the built root filesystem (read-only, no network) by the
runtime check: it must exit 0 and, when ``expect`` is given, print that text; the first line
it prints is recorded in the build marker (``verifiers sandbox check`` lists it). That is how a
runtime without Python packages to import (compilers, node, a JVM) proves it works.

A missing or broken runtime raises :class:`SandboxUnavailable` with the command that fixes it
(``verifiers sandbox build <name>``) when a session is asked for, before any model code runs:
the engine turns that into ``error/infra``, never a score.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.errors import InfraError, SandboxUnavailable
from verifiers.settings import env as setting

from ._settings import SandboxSettings

__all__ = [
    "BASE_PATH",
    "JOB_ENV",
    "Runtime",
    "build_rootfs",
    "check_rootfs",
    "load_runtime",
    "rootfs_path",
    "runtime_for",
    "runtime_hash",
]

DEFINITION = "runtime.toml"
MARKER = "etc/verifiers-runtime.json"
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
JOB_ENV: dict[str, str] = {
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}
"""Environment every job gets on every backend (a runtime's ``env`` adds to it)."""

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_KEYS = {
    "description",
    "python",
    "python_version",
    "venv",
    "apt",
    "wheels",
    "imports",
    "env",
    "preload",
    "overhead_mb",
    "commands",
    "setup",
    "npm",
}
_NPM_PIN = re.compile(
    r"^((?:@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*)@(\d+\.\d+\.\d+[A-Za-z0-9.+-]*)$"
)
NPM_ROOT = "/opt/npm/node_modules"
"""Where a runtime's ``npm`` packages are unpacked (``NPM_ROOT/<name>``)."""
_PIP_VERSION = "24.3.1"
_PLATFORMS = (
    "manylinux_2_31_x86_64",  # cadquery-ocp 7.9 ships only this tag (bookworm's glibc is 2.36)
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "any",
)


@dataclass(frozen=True)
class Runtime:
    """A parsed ``runtime.toml`` (see the module docstring for the fields)."""

    name: str
    folder: Path
    python: str
    python_version: str
    apt: tuple[str, ...]
    wheels: tuple[str, ...]
    imports: tuple[str, ...]
    venv: str | None = None
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)
    preload: str | None = None
    """File (in the definition folder) the runner's zygote runs once before any job."""
    overhead_mb: int = 0
    """Memory the preloaded zygote keeps resident, added to a container's cgroup limit."""
    commands: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    """Check commands: name -> (argv, text the output must contain, "" for any)."""
    setup: str | None = None
    """Script (in the definition folder) run last in the build, as root in the new root."""
    npm: tuple[str, ...] = ()
    """npm packages, each ``name@version`` (unpacked into ``NPM_ROOT/<name>``)."""

    @property
    def interpreter(self) -> str:
        """The runner's (and jobs' ``python``) interpreter: the venv's when there is one."""
        return f"{self.venv}/bin/python" if self.venv else self.python

    def preload_source(self) -> str:
        """The source of ``preload`` ('' without one): both backends send it in the runner's
        config and its zygote runs it once before any job (see ``_runner._run_preload``).

        Raises:
            SandboxUnavailable: the file cannot be read (a broken runtime, never a job's).
        """
        if not self.preload:
            return ""
        try:
            return (self.folder / self.preload).read_text(encoding="utf-8")
        except OSError as exc:
            raise SandboxUnavailable(
                f"runtime {self.name!r}: cannot read its preload {self.preload!r}: {exc}",
                hint=f"fix {self.folder / DEFINITION} (see docs/sandbox.md)",
                retryable=False,
            ) from None

    @property
    def path_env(self) -> str:
        """``PATH`` of a job: the venv's ``bin`` first when there is one."""
        return f"{self.venv}/bin:{BASE_PATH}" if self.venv else BASE_PATH

    def job_env(self) -> dict[str, str]:
        """The environment a job starts with (without ``PATH``)."""
        return {**JOB_ENV, **self.env}

    def pins(self) -> dict[str, str]:
        """Distribution name (normalised) -> pinned version."""
        out: dict[str, str] = {}
        for wheel in self.wheels:
            match = _PIN.match(wheel)
            assert match is not None  # checked in load_runtime
            out[_normal(match.group(1))] = match.group(2)
        return out


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def load_runtime(folder: Path) -> Runtime | None:
    """The runtime defined in ``folder`` (None when it has no ``runtime.toml``).

    Raises:
        InfraError: the definition is malformed (the message names the file, key and fix).
    """
    file = folder / DEFINITION
    if not file.is_file():
        return None
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InfraError(f"{file}: not valid TOML: {exc}") from None
    table = doc.get("runtime")
    if not isinstance(table, dict) or set(doc) != {"runtime"}:
        raise InfraError(f"{file}: must hold exactly one [runtime] table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise InfraError(f"{file}: unknown key(s) {unknown} in [runtime]; known: {sorted(_KEYS)}")

    def strings(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InfraError(f"{file}: [runtime].{key} must be a list of strings")
        return tuple(value)

    def pinned(key: str, pattern: re.Pattern[str], what: str, form: str) -> tuple[str, ...]:
        items = strings(key)
        for item in items:
            if not pattern.match(item):
                raise InfraError(
                    f"{file}: {what} {item!r} is not pinned; write it as {form!r} "
                    "(runtimes are reproducible: every package, dependencies included)"
                )
        return items

    wheels = pinned("wheels", _PIN, "wheel", "name==version")
    npm = pinned("npm", _NPM_PIN, "npm package", "name@1.2.3")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise InfraError(f"{file}: [runtime.env] values must be strings")
    python = table.get("python", "/usr/bin/python3")
    venv = table.get("venv")
    for key, value in (("python", python), ("venv", venv)):
        if value is not None and (not isinstance(value, str) or not value.startswith("/")):
            raise InfraError(f"{file}: [runtime].{key} must be an absolute path in the runtime")
    preload = table.get("preload")
    if preload is not None and (
        not isinstance(preload, str) or not (folder / preload).is_file() or "/" in preload
    ):
        raise InfraError(f"{file}: [runtime].preload must name a file in {folder}")
    setup = table.get("setup")
    if setup is not None and (
        not isinstance(setup, str) or "/" in setup or not (folder / setup).is_file()
    ):
        raise InfraError(f"{file}: [runtime].setup must name a file in {folder}")
    overhead = table.get("overhead_mb", 0)
    if not isinstance(overhead, int) or isinstance(overhead, bool) or overhead < 0:
        raise InfraError(f"{file}: [runtime].overhead_mb must be a whole number >= 0")
    commands: dict[str, tuple[tuple[str, ...], str]] = {}
    raw_commands = table.get("commands", {})
    if not isinstance(raw_commands, dict):
        raise InfraError(f"{file}: [runtime.commands] must be a table of name -> {{argv, expect}}")
    for cname, entry in raw_commands.items():
        argv = entry.get("argv") if isinstance(entry, dict) else None
        expect = entry.get("expect", "") if isinstance(entry, dict) else None
        if (
            not isinstance(entry, dict)
            or set(entry) - {"argv", "expect"}
            or not isinstance(argv, list)
            or not argv
            or not all(isinstance(a, str) for a in argv)
            or not isinstance(expect, str)
        ):
            raise InfraError(
                f"{file}: [runtime.commands].{cname} must be "
                '{ argv = ["tool", "--version"], expect = "text" } (expect optional)'
            )
        commands[str(cname)] = (tuple(argv), expect)
    return Runtime(
        name=folder.name,
        commands=commands,
        setup=setup,
        npm=npm,
        preload=preload,
        overhead_mb=overhead,
        folder=folder,
        python=python,
        python_version=str(table.get("python_version", "3.11")),
        apt=strings("apt"),
        wheels=wheels,
        imports=strings("imports"),
        venv=venv,
        description=str(table.get("description", "")),
        env=dict(env),
    )


def runtime_for(folder: Path) -> Runtime | None:
    """How the runner of the image folder ``folder`` starts on either backend: its runtime
    (interpreter, preload, ``overhead_mb``, env), or None for a Dockerfile-only image (the
    default runner: ``/usr/bin/python3``, no preload).

    Raises:
        SandboxUnavailable: the definition is malformed (a broken runtime, never a job's).
    """
    try:
        return load_runtime(folder)
    except InfraError as exc:
        raise SandboxUnavailable(
            f"runtime definition of {folder.name!r} is invalid: {exc}",
            hint=f"fix {folder / DEFINITION} (see docs/sandbox.md)",
            retryable=False,
        ) from None


# -- where -------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """``VERIFIERS_SANDBOX_CACHE``, else ``/var/cache/verifiers-sandbox`` (root) or
    ``~/.cache/verifiers/sandbox``."""
    override = setting("VERIFIERS_SANDBOX_CACHE")
    if override:
        path = Path(override)
    elif os.geteuid() == 0:
        path = Path("/var/cache/verifiers-sandbox")
    else:
        path = Path.home() / ".cache" / "verifiers" / "sandbox"
    path.mkdir(parents=True, exist_ok=True)
    return path


def runtime_hash(runtime: Runtime, settings: SandboxSettings) -> str:
    """The input hash shared by the root filesystem and the Docker image tag."""
    from ._images import ImageDef, base_tag

    folder = ImageDef(runtime.name, runtime.folder).input_hash()
    return hashlib.sha256(f"{folder}:{base_tag(settings)}".encode()).hexdigest()[:16]


def rootfs_path(runtime: Runtime, settings: SandboxSettings) -> Path:
    """Where the runtime's root filesystem lives once built (it may not exist yet)."""
    return cache_dir() / "rootfs" / f"{runtime.name}-{runtime_hash(runtime, settings)}"


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """One builder per name at a time (several engineers or CI jobs may start one)."""
    lock = cache_dir() / "rootfs" / f".{name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- build -------------------------------------------------------------------------------------


def base_rootfs(settings: SandboxSettings, log: Callable[[str], None]) -> Path:
    """The debootstrapped Debian base as a folder (made once per base recipe).

    Raises:
        SandboxUnavailable: debootstrap is not installed or the caller is not root.
        InfraError: debootstrap failed (its output is in the message).
    """
    from ._images import _base_recipe, base_tag

    tag = base_tag(settings)
    final = cache_dir() / "rootfs" / f"base-{tag.rpartition(':')[2]}"
    with _locked("base"):
        if (final / "etc" / "debian_version").is_file():
            return final
        if shutil.which("debootstrap") is None or os.geteuid() != 0:
            raise SandboxUnavailable(
                "building a runtime needs debootstrap, run as root",
                hint="apt-get install debootstrap, then run `sudo verifiers sandbox build`",
            )
        recipe = _base_recipe()
        work = Path(tempfile.mkdtemp(prefix=".base-", dir=final.parent))
        try:
            log(f"base: debootstrap --variant=minbase {recipe['suite']} from {recipe['mirror']}")
            done = subprocess.run(
                ["debootstrap", "--variant=minbase", recipe["suite"], str(work), recipe["mirror"]],
                capture_output=True,
                text=True,
                timeout=1800,
                check=False,
            )
            if done.returncode != 0:
                raise InfraError(f"debootstrap failed: {(done.stdout + done.stderr)[-2000:]}")
            if recipe["apt"]:
                (work / "etc/apt/apt.conf.d/99verifiers").write_text(recipe["apt"])
            for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for item in (work / leftover).glob("*"):
                    if item.is_file():
                        item.unlink()
            (work / "work").mkdir(exist_ok=True)
            work.chmod(0o755)
            work.rename(final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final


def _download_wheels(runtime: Runtime, into: Path) -> None:
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    argv += ["--no-deps", "--only-binary=:all:", "--implementation", "cp"]
    tag = runtime.python_version.replace(".", "")
    argv += ["--python-version", runtime.python_version, "--abi", f"cp{tag}", "--abi", "abi3"]
    argv += ["--abi", "none"]
    for platform in _PLATFORMS:
        argv += ["--platform", platform]
    argv += ["-d", str(into), f"pip=={_PIP_VERSION}", *runtime.wheels]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise InfraError(f"downloading the wheels of {runtime.name} failed: {done.stderr[-2000:]}")


def _npm_tarball(package: str) -> str:
    """The file ``npm pack`` writes for ``package`` (``@types/node@18.1.0`` ->
    ``types-node-18.1.0.tgz``)."""
    match = _NPM_PIN.match(package)
    assert match is not None  # checked in load_runtime
    return f"{match.group(1).lstrip('@').replace('/', '-')}-{match.group(2)}.tgz"


def _download_npm(runtime: Runtime, into: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SandboxUnavailable(
            f"runtime {runtime.name} pins npm packages: building it needs npm on the host",
            hint="apt-get install npm (or any npm >= 7), then rebuild",
        )
    argv = [npm, "pack", "--silent", "--ignore-scripts", "--pack-destination", str(into)]
    done = subprocess.run(
        [*argv, *runtime.npm], capture_output=True, text=True, timeout=1800, check=False
    )
    missing = [p for p in runtime.npm if not (into / _npm_tarball(p)).is_file()]
    if done.returncode != 0 or missing:
        raise InfraError(
            f"downloading the npm packages of {runtime.name} failed ({missing or 'npm pack'}): "
            f"{done.stderr[-2000:]}"
        )


def _resolv_conf() -> list[str]:
    real = os.path.realpath("/etc/resolv.conf")
    return ["--ro-bind", real, "/etc/resolv.conf"] if os.path.isfile(real) else []


def _build_script(runtime: Runtime) -> str:
    quoted = " ".join(runtime.apt)
    lines = ["set -eu", "export DEBIAN_FRONTEND=noninteractive"]
    if runtime.apt:
        lines += [
            "apt-get update -qq",
            f"apt-get install -y -qq --no-install-recommends {quoted}",
            "apt-get clean",
            "rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin",
        ]
    python = runtime.python
    if runtime.venv:
        lines.append(f"{runtime.python} -m venv --without-pip {runtime.venv}")
        python = f"{runtime.venv}/bin/python"
    if runtime.wheels:
        lines += [
            "pip_whl=$(ls /tmp/wheels/pip-*.whl)",
            "set -- $(ls /tmp/wheels/*.whl | grep -v '/pip-')",
            f"{python} $pip_whl/pip install --quiet --no-index --no-deps --no-cache-dir "
            "--disable-pip-version-check --root-user-action=ignore --break-system-packages "
            '"$@"',
        ]
    for package in runtime.npm:
        match = _NPM_PIN.match(package)
        assert match is not None
        dest = f"{NPM_ROOT}/{match.group(1)}"
        lines += [
            f"mkdir -p {dest}",
            f"tar -xzf /tmp/npm/{_npm_tarball(package)} --strip-components=1 --no-same-owner "
            f"-C {dest}",
            f"chmod -R a+rX,go-w {dest}",
        ]
    if runtime.setup:
        lines.append(f"/bin/sh /tmp/runtime/{runtime.setup}")
    lines += ["mkdir -p /work", "chmod 0755 /work"]
    return "\n".join(lines) + "\n"


def _in_root(
    root: Path,
    argv: list[str],
    *,
    writable: bool,
    extra: list[str] | None = None,
    timeout: float = 1800,
) -> subprocess.CompletedProcess[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "building and checking runtimes needs bubblewrap", hint="apt-get install bubblewrap"
        )
    command = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    command += ["--bind" if writable else "--ro-bind", str(root), "/"]
    command += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
    command += extra or []
    if not writable:
        command.append("--unshare-net")
    command += ["--clearenv", "--setenv", "PATH", BASE_PATH, "--setenv", "LANG", "C.UTF-8"]
    command += ["--setenv", "HOME", "/root", "--chdir", "/", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def check_rootfs(runtime: Runtime, root: Path) -> dict[str, str]:
    """Import every module of the runtime inside ``root`` and compare installed versions
    with the pins; returns distribution -> version.

    Raises:
        InfraError: a module does not import or a version differs (the message says which).
    """
    python = runtime.interpreter
    code = (
        "import importlib, importlib.metadata as md, json, sys\n"
        "mods, dists = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
        "bad = {}\n"
        "for m in mods:\n"
        "    try: importlib.import_module(m)\n"
        "    except Exception as e: bad[m] = f'{type(e).__name__}: {e}'\n"
        "got = {}\n"
        "for d in dists:\n"
        "    try: got[d] = md.version(d)\n"
        "    except md.PackageNotFoundError: got[d] = None\n"
        "print(json.dumps({'bad': bad, 'got': got, 'python': sys.version.split()[0]}))\n"
    )
    pins = runtime.pins()
    done = _in_root(
        root,
        [python, "-I", "-c", code, json.dumps(list(runtime.imports)), json.dumps(list(pins))],
        writable=False,
        timeout=300,
    )
    try:
        report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise InfraError(
            f"runtime {runtime.name}: {python} does not run in {root}: {done.stderr[-1000:]}"
        ) from None
    problems = [f"import {m}: {why}" for m, why in report["bad"].items()]
    for name, want in pins.items():
        have = report["got"].get(name)
        if have != want:
            problems.append(f"{name}: pinned {want}, found {have}")
    tools: dict[str, str] = {}
    for cname, (argv, expect) in runtime.commands.items():
        ran = _in_root(root, list(argv), writable=False, timeout=300)
        text = ran.stdout + ran.stderr
        if ran.returncode != 0:
            problems.append(f"{cname}: {' '.join(argv)} exited {ran.returncode}: {text[-300:]}")
        elif expect and expect not in text:
            problems.append(f"{cname}: {' '.join(argv)} does not print {expect!r}: {text[:300]}")
        else:
            tools[cname] = (text.strip().splitlines() or [""])[0][:200]
    if problems:
        raise InfraError(f"runtime {runtime.name} fails its check: " + "; ".join(problems))
    versions = {name: str(v) for name, v in report["got"].items()}
    versions["python"] = str(report["python"])
    versions.update(tools)
    return versions


def ready_rootfs(runtime: Runtime, settings: SandboxSettings) -> Path:
    """The built, checked root filesystem of ``runtime``.

    Raises:
        SandboxUnavailable: not built for the current definition (the hint is the fix).
    """
    root = rootfs_path(runtime, settings)
    if not (root / MARKER).is_file():
        raise SandboxUnavailable(
            f"sandbox runtime {runtime.name!r} is not built for its current definition "
            f"(expected {root})",
            hint=f"run `verifiers sandbox build {runtime.name}`",
            retryable=False,
        )
    return root


def build_rootfs(
    runtime: Runtime,
    settings: SandboxSettings,
    log: Callable[[str], None],
    *,
    force: bool = False,
) -> tuple[Path, bool]:
    """Build the runtime's root filesystem unless it exists; returns (path, built).

    Raises:
        SandboxUnavailable: debootstrap or bubblewrap is missing, or not root.
        InfraError: apt, pip or the check failed (the output tail is in the message).
    """
    final = rootfs_path(runtime, settings)
    if not force and (final / MARKER).is_file():
        log(f"{runtime.name} {final.name}: up to date")
        return final, False
    base = base_rootfs(settings, log)
    with _locked(runtime.name):
        if not force and (final / MARKER).is_file():
            return final, False
        work = Path(tempfile.mkdtemp(prefix=f".{runtime.name}-", dir=final.parent))
        wheels = Path(tempfile.mkdtemp(prefix=f".{runtime.name}-wheels-", dir=final.parent))
        try:
            log(f"{runtime.name}: copying the base")
            shutil.rmtree(work)
            subprocess.run(["cp", "-a", str(base), str(work)], check=True, timeout=600)
            if runtime.wheels:
                log(f"{runtime.name}: downloading {len(runtime.wheels)} pinned wheels")
                _download_wheels(runtime, wheels)
            if runtime.npm:
                log(f"{runtime.name}: downloading {len(runtime.npm)} pinned npm packages")
                _download_npm(runtime, wheels)
            log(f"{runtime.name}: apt {len(runtime.apt)} package(s), pip into {runtime.python}")
            done = _in_root(
                work,
                ["/bin/sh", "-c", _build_script(runtime)],
                writable=True,
                extra=[
                    *_resolv_conf(),
                    *("--ro-bind", str(wheels), "/tmp/wheels"),
                    *("--ro-bind", str(wheels), "/tmp/npm"),
                    *("--ro-bind", str(runtime.folder), "/tmp/runtime"),
                ],
            )
            if done.returncode != 0:
                tail = (done.stdout + done.stderr)[-3000:]
                raise InfraError(f"building runtime {runtime.name} failed:\n{tail}")
            versions = check_rootfs(runtime, work)
            marker = {"name": runtime.name, "hash": runtime_hash(runtime, settings), **versions}
            (work / MARKER).write_text(json.dumps(marker, indent=1, sort_keys=True) + "\n")
            if final.exists():
                shutil.rmtree(final)
            work.rename(final)
            log(f"{runtime.name}: ok " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(wheels, ignore_errors=True)
    return final, True


def image_changes(runtime: Runtime, label: str) -> list[str]:
    """The Dockerfile changes that make the runtime's root filesystem its Docker image: the
    job environment, ``/work`` and the labels the cleanup finds it by."""
    env = " ".join(f"{k}={v}" for k, v in {**runtime.job_env(), "PATH": runtime.path_env}.items())
    return [
        f"ENV {env}",
        "WORKDIR /work",
        f"LABEL {label}=image",
        f"LABEL {label}.image={runtime.name}",
    ]
