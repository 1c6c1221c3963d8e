"""``verifiers sandbox build|check|prune``: make images, show what works, remove leftovers.

``verifiers.cli`` delegates its ``sandbox`` verb here: ``main(argv) -> int``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from typing import Any

from verifiers.errors import MissingDependency, VerifierError

from ._settings import SandboxSettings

__all__ = ["main"]


def _say(message: str) -> None:
    print(message, flush=True)


def _fail(exc: VerifierError) -> int:
    print(f"error: {exc.message}", file=sys.stderr)
    if exc.hint:
        print(f"hint: {exc.hint}", file=sys.stderr)
    return 1


def _build(args: argparse.Namespace, settings: SandboxSettings) -> int:
    """Build runtimes' root filesystems (no Docker needed) and, when an engine answers, their
    Docker images (``docker import`` of the same folder) and any Dockerfile-only images."""
    from ._images import build_image, find_images
    from ._runtimes import build_rootfs, load_runtime

    images = find_images(settings)
    names = list(args.names) or sorted(images)
    unknown = [n for n in names if n not in images]
    if unknown:
        print(f"error: unknown image(s) {unknown}; known: {sorted(images)}", file=sys.stderr)
        return 2
    client: Any = None
    try:
        from ._docker import connect

        client = connect(settings, timeout=1800)
    except (VerifierError, MissingDependency) as exc:
        _say(f"docker: not used ({exc.message}); building root filesystems only")
    for name in names:
        started = time.monotonic()
        runtime = load_runtime(images[name].path)
        if client is not None:
            tag, built = build_image(client, images[name], settings, _say, force=args.force)
            verb = "built" if built else "up to date"
            _say(f"{name}: {verb} {tag} ({time.monotonic() - started:.1f}s)")
        elif runtime is not None:
            root, built = build_rootfs(runtime, settings, _say, force=args.force)
            verb = "built" if built else "up to date"
            _say(f"{name}: {verb} {root} ({time.monotonic() - started:.1f}s)")
        else:
            _say(f"{name}: skipped (a Dockerfile-only image needs a Docker engine)")
    return 0


def _local_smoke(settings: SandboxSettings) -> tuple[bool, str]:
    from ._local import LocalProvider

    async def run() -> str:
        provider = LocalProvider(settings)
        try:
            async with provider.session("python", timeout_s=20) as sandbox:
                result = await sandbox.exec(["/bin/echo", "ok"])
            return f"{provider.isolation}: echo -> {result.text().strip()!r}"
        finally:
            await provider.close()

    try:
        return True, asyncio.run(run())
    except VerifierError as exc:
        return False, str(exc)


def _isolation(settings: SandboxSettings) -> dict[str, str]:
    """What each backend's isolation holds on this host (one line each)."""
    from ._local import detect_isolation

    try:
        local: str = detect_isolation(settings.local_isolation)
    except VerifierError as exc:
        local = f"unavailable: {exc}"
    lines = {
        "docker": "container per runner: read-only runtime image, network none, cap_drop ALL "
        "+ runner caps, no-new-privileges, cgroup memory=memory+swap, pids, CPU quota, "
        "tmpfs /work and /tmp, non-root jobs",
    }
    if local == "bwrap":
        lines["local"] = (
            "bubblewrap: runtime root read-only as /, new pid/net/ipc/uts namespaces (no "
            "network), tmpfs /work /tmp /var/tmp, jobs as an unprivileged uid, rlimits for "
            "memory (address space), CPU, processes, file size; host files invisible"
        )
    elif local == "unshare":
        lines["local"] = (
            "unshare: new pid/net/ipc/uts/mount namespaces, host filesystem visible; runtime "
            "sessions refused (install bubblewrap) unless local_python is set"
        )
    else:
        lines["local"] = f"{local}: rlimits only; runtime sessions refused (install bubblewrap)"
    return lines


def _check(args: argparse.Namespace, settings: SandboxSettings) -> int:
    from rich.console import Console
    from rich.table import Table

    from ._images import find_images, image_tag
    from ._local import _probe_cached

    table = Table(title="verifiers sandbox")
    table.add_column("part")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    ok_all = True

    def row(part: str, ok: bool, detail: str, required: bool = True) -> None:
        nonlocal ok_all
        if required and not ok:
            ok_all = False
        table.add_row(part, "[green]ok[/]" if ok else "[red]missing[/]", detail)

    client: Any = None
    try:
        from ._docker import connect

        client = connect(settings, timeout=10)
        version = client.version().get("Version", "?")
        row("docker engine", True, f"version {version}")
    except (VerifierError, MissingDependency) as exc:
        row("docker engine", False, str(exc), required=False)
    from ._runtimes import MARKER, check_rootfs, load_runtime, rootfs_path

    for name, image in sorted(find_images(settings).items()):
        runtime = load_runtime(image.path)
        if runtime is not None:
            root = rootfs_path(runtime, settings)
            if not (root / MARKER).is_file():
                row(
                    f"runtime {name}",
                    False,
                    f"not built (run `verifiers sandbox build {name}`)",
                    required=False,
                )
            else:
                try:
                    versions = check_rootfs(runtime, root)
                    listing = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
                    row(f"runtime {name}", True, f"{root}: {listing}")
                except VerifierError as exc:
                    row(
                        f"runtime {name}",
                        False,
                        f"{exc} (run `verifiers sandbox build --force {name}`)",
                    )
        tag = image_tag(image, settings)
        built = False
        if client is not None:
            try:
                client.images.get(tag)
                built = True
            except Exception:  # ImageNotFound or engine error: not usable either way
                built = False
        row(
            f"image {name}",
            built,
            tag if built else f"{tag} (run `verifiers sandbox build {name}`)",
            required=False,
        )
    for tool in ("bwrap", "unshare"):
        works = _probe_cached(tool)  # type: ignore[arg-type]
        where = shutil.which(tool) or "not installed"
        row(tool, works, where if works else f"{where} (does not work here)", required=False)
    ok, detail = _local_smoke(settings)
    row("local backend", ok, detail)
    for backend, what in _isolation(settings).items():
        table.add_row(f"isolation {backend}", "", what)
    from . import docker_ready

    row("auto picks", True, "docker" if docker_ready(settings) else "local")
    Console().print(table)
    if client is not None:
        client.close()
    return 0 if ok_all else 1


def _prune(args: argparse.Namespace, settings: SandboxSettings) -> int:
    from ._docker import connect, prune_containers

    client = connect(settings, timeout=60)
    removed = prune_containers(client, everything=args.all)
    _say(f"removed {removed} sandbox container(s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``verifiers sandbox <verb>``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="verifiers sandbox", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    build = verbs.add_parser("build", help="build sandbox images (skips unchanged ones)")
    build.add_argument("names", nargs="*", help="image names (default: all)")
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    verbs.add_parser("check", help="show the engine, images and isolation features")
    prune = verbs.add_parser("prune", help="remove containers whose owner process is dead")
    prune.add_argument("--all", action="store_true", help="remove every sandbox container")
    args = parser.parse_args(argv)
    settings = SandboxSettings()
    try:
        if args.verb == "build":
            return _build(args, settings)
        if args.verb == "check":
            return _check(args, settings)
        return _prune(args, settings)
    except VerifierError as exc:
        return _fail(exc)


if __name__ == "__main__":
    sys.exit(main())
