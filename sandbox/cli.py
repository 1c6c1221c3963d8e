"""``verifiers sandbox build|check|prune``: make images, show what works, remove leftovers.

``verifiers.cli`` delegates its ``sandbox`` verb here: ``main(argv) -> int``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
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


def _smoke(kind: str, settings: SandboxSettings) -> tuple[bool, str, dict[str, Any]]:
    """Run one job on a backend: (worked, detail, what its runner says holds between jobs)."""

    async def run() -> tuple[str, dict[str, Any]]:
        provider: Any
        if kind == "docker":
            from ._docker import DockerProvider

            provider = DockerProvider(settings)
        else:
            from ._local import LocalProvider

            provider = LocalProvider(settings)
        try:
            async with provider.session("python", timeout_s=20) as sandbox:
                result = await sandbox.exec(["/bin/echo", "ok"])
                report = dict(sandbox.runner_hello.get("isolation") or {})
                cpus = sandbox.runner_hello.get("cpus")
            where = getattr(provider, "isolation", kind)
            home = f" (jobs on CPUs {cpus})" if cpus else ""
            return f"{where}: echo -> {result.text().strip()!r}{home}", report
        finally:
            await provider.close()

    try:
        detail, report = asyncio.run(run())
        return True, detail, report
    except (VerifierError, MissingDependency) as exc:
        return False, str(exc), {}


_STARVATION_ROWS = {
    "cgroup": "a job's CPU from its own cgroup's CPU account (dead tasks included)",
    "container": "a job's CPU from the container's CPU account (dead tasks included)",
    "pids": "no CPU account: starved only when no task of the job died (a job that churns "
    "processes or threads times out as its fail)",
    "none": "no CPU account, no private PID namespace: never starved (load can time a job "
    "out as its fail; run as root for per-job cgroups)",
}
"""How the wall backstop counts a job's CPU (docs/sandbox.md, "Machine load is never the
model's score"), by the runner's ``starvation`` report."""


def _isolation_rows(kind: str, report: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """What holds between two jobs of one warm runner, from the runner's own report."""
    cgroup = report.get("job_cgroup") or {}

    def per_job(controller: str, docker: str, ours: str, without: str) -> tuple[bool, str]:
        if kind == "docker":
            return True, docker
        if cgroup.get(controller):
            return True, f"a cgroup v{cgroup['version']} per job{ours}"
        return False, without

    memory = per_job(
        "memory",
        "the container's memory cgroup (memory = memory+swap), per session",
        ": all its processes together",
        "RLIMIT_AS per process only (no writable cgroup here: run as root)",
    )
    pids = per_job("pids", "the container's pids cgroup", "", "RLIMIT_NPROC per uid only")
    mqueue = str(report.get("mqueue", "?"))
    counting = str(report.get("starvation", "none"))
    return [
        (f"{kind}: memory per job", *memory),
        (f"{kind}: pids per job", *pids),
        (
            f"{kind}: SysV IPC",
            bool(report.get("ipc_scrub")),
            "removed after each job, then checked" if report.get("ipc_scrub") else "not scrubbed",
        ),
        (
            f"{kind}: POSIX mqueues",
            mqueue in ("scrub", "block"),
            {"scrub": "removed after each job", "block": "mq_open refused"}.get(mqueue, mqueue),
        ),
        (
            f"{kind}: kernel keyrings",
            bool(report.get("keyring_blocked")),
            "add_key/keyctl refused (seccomp)" if report.get("keyring_blocked") else "open",
        ),
        (
            f"{kind}: /tmp, /dev/shm",
            report.get("scratch_scrub") == "all",
            "private, size-capped, emptied after each job"
            if report.get("scratch_scrub") == "all"
            else "shared with the host: only the job uid's files are removed",
        ),
        (
            f"{kind}: starvation abstain",
            counting in ("cgroup", "container", "pids"),
            _STARVATION_ROWS.get(counting, counting),
        ),
        (
            f"{kind}: shared memory check",
            bool(report.get("shmem_check")),
            "runner recycled if a job left shmem charged"
            if report.get("shmem_check")
            else "no memory cgroup visible to the runner",
        ),
    ]


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

    images = find_images(settings)
    unknown = [n for n in args.names if n not in images]
    if unknown:
        print(f"error: unknown runtime(s) {unknown}; known: {sorted(images)}", file=sys.stderr)
        return 2
    from . import docker_ready

    # The slow parts run at once, each in its own thread (they wait on child processes and the
    # disk): each runtime's import check (GBs of packages, read from a cold page cache in a
    # fresh CI run: 3 minutes one after the other) and the two backends' smoke jobs. The rows
    # are then written in their usual order.
    with ThreadPoolExecutor(max_workers=len(images) + 2) as pool:
        checks: dict[str, Future[dict[str, str]]] = {}
        runtimes: dict[str, Any] = {}
        for name, image in sorted(images.items()):
            if args.names and name not in args.names:
                continue
            runtime = runtimes[name] = load_runtime(image.path)
            if runtime is not None and (rootfs_path(runtime, settings) / MARKER).is_file():
                checks[name] = pool.submit(check_rootfs, runtime, rootfs_path(runtime, settings))
        local_smoke = pool.submit(_smoke, "local", settings)
        docker_smoke = pool.submit(_smoke, "docker", settings) if docker_ready(settings) else None
        for name, runtime in runtimes.items():
            if runtime is not None:
                root = rootfs_path(runtime, settings)
                if name not in checks:
                    row(
                        f"runtime {name}",
                        False,
                        f"not built (run `verifiers sandbox build {name}`)",
                        required=False,
                    )
                else:
                    try:
                        versions = checks[name].result()
                        listing = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
                        row(f"runtime {name}", True, f"{root}: {listing}")
                    except VerifierError as exc:
                        row(
                            f"runtime {name}",
                            False,
                            f"{exc} (run `verifiers sandbox build --force {name}`)",
                        )
            tag = image_tag(images[name], settings)
            built = False
            if client is not None:
                try:
                    client.images.get(tag)
                    built = True
                except Exception:  # ImageNotFound or engine error: not usable either way
                    built = False
            if client is None:  # say why: "not built" would send the user to the wrong fix
                detail = f"{tag}: unknown, the Docker engine is unreachable (see above)"
            else:
                detail = tag if built else f"{tag} (run `verifiers sandbox build {name}`)"
            row(f"image {name}", built, detail, required=False)
        from ._host import host_features

        for feature in host_features():
            row(f"host: {feature.name}", feature.works, feature.detail, required=False)
        for tool in ("bwrap", "unshare"):
            works = _probe_cached(tool)  # type: ignore[arg-type]
            where = shutil.which(tool) or "not installed"
            row(tool, works, where if works else f"{where} (does not work here)", required=False)
        ok, detail, report = local_smoke.result()
        row("local backend", ok, detail)
        for part, holds, why in _isolation_rows("local", report) if ok else []:
            row(part, holds, why, required=False)
        for backend, what in _isolation(settings).items():
            table.add_row(f"isolation {backend}", "", what)
        if docker_smoke is not None:
            works, detail, report = docker_smoke.result()
            row("docker backend", works, detail, required=False)
            for part, holds, why in _isolation_rows("docker", report) if works else []:
                row(part, holds, why, required=False)
    row("auto picks", True, "docker" if docker_ready(settings) else "local")
    Console().print(table)
    if client is not None:
        client.close()
    return 0 if ok_all else 1


def _prune(args: argparse.Namespace, settings: SandboxSettings) -> int:
    from ._prune import prune_images, prune_rootfs

    verb = "would remove" if args.dry_run else "removed"
    client = None
    if not args.runtimes_only and _engine_answers(settings):
        from ._docker import connect, prune_containers

        client = connect(settings, timeout=60)
        if not args.dry_run:
            _say(f"removed {prune_containers(client, everything=args.all)} sandbox container(s)")
    if args.containers_only:
        return 0
    reports = [("root filesystem", prune_rootfs(settings, dry_run=args.dry_run))]
    if client is not None:
        reports.append(("image", prune_images(client, settings, dry_run=args.dry_run)))
        client.close()
    for what, report in reports:
        for name in report.removed:
            _say(f"{verb} stale {what} {name}")
        for name in report.in_use:
            _say(f"kept stale {what} {name}: in use")
        for name in report.unknown:
            _say(f"kept {what} {name}: not a runtime this checkout defines")
        _say(f"{verb} {len(report.removed)} stale {what}(s)")
    return 0


def _engine_answers(settings: SandboxSettings) -> bool:
    """Whether a Docker engine answers (prune works on the root filesystems without one)."""
    from ._docker import connect

    try:
        connect(settings, timeout=10).close()
    except Exception:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run ``verifiers sandbox <verb>``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="verifiers sandbox", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    build = verbs.add_parser("build", help="build sandbox images (skips unchanged ones)")
    build.add_argument("names", nargs="*", help="image names (default: all)")
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    check = verbs.add_parser("check", help="show the engine, images and isolation features")
    check.add_argument(
        "names", nargs="*", help="runtimes to verify (default: all; each imports its packages)"
    )
    prune = verbs.add_parser(
        "prune",
        help="remove containers whose owner process is dead, and root filesystems and images "
        "of runtimes whose definition changed (never one in use)",
    )
    prune.add_argument("--all", action="store_true", help="remove every sandbox container")
    prune.add_argument("--dry-run", action="store_true", help="list what would be removed")
    only = prune.add_mutually_exclusive_group()
    only.add_argument("--containers-only", action="store_true", help="only containers")
    only.add_argument("--runtimes-only", action="store_true", help="only runtimes")
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
