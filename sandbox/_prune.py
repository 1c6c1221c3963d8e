"""``verifiers sandbox prune``: remove built runtimes whose definition is no longer current.

Every change to a runtime's folder (or to the Debian base recipe) gives it a new input hash,
so builds pile up: ``<cache>/rootfs/<name>-<hash>`` folders (~0.2-1.5 GB each) and
``<prefix>/<name>:<hash>`` images. Pruning keeps, for every runtime this checkout defines,
the one whose hash is current, and removes the others:

* **in use is never removed**: a local provider holds a shared ``flock`` on each root
  filesystem it starts runners from (:func:`hold_rootfs`), for as long as it is open; prune
  takes an exclusive one without waiting and skips the folder when it cannot. A build in
  progress holds the runtime's build lock, which prune takes too. Docker refuses to remove
  an image a container runs; that image is kept as well.
* **unknown names are kept**: a folder or image of a runtime this checkout does not define
  (another branch's, a plugin's) has no current hash to compare with, so it stays.
* ``latest`` tags stay (they name whatever was built last).

"Current" is relative to the definitions this checkout has: on a machine shared by checkouts
of different versions, another checkout's builds look stale from here. ``--dry-run`` lists
what would go.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._images import base_tag, find_images, image_tag
from ._runtimes import _locked, cache_dir, load_runtime, rootfs_path
from ._settings import SandboxSettings

__all__ = ["PruneReport", "hold_rootfs", "prune_images", "prune_rootfs"]

_FOLDER = re.compile(r"^(?P<name>[a-z0-9][a-z0-9_.]*(?:-[a-z0-9_.]+)*?)-(?P<hash>[0-9a-f]{12,16})$")


@dataclass
class PruneReport:
    """What a prune removed and what it kept, by folder name or image tag."""

    removed: list[str] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)
    """Stale, but a provider (or a container) still uses it."""
    unknown: list[str] = field(default_factory=list)
    """Of a runtime this checkout does not define."""


def hold_rootfs(root: Path, recheck: Callable[[], Path]) -> int:
    """Mark ``root`` in use until the returned fd is closed (a shared ``flock`` on it).

    ``recheck`` (``ready_rootfs`` for the runtime) runs once the lock is held: a prune that
    removed the folder just before is then seen, not run from.

    Raises:
        SandboxUnavailable: (from ``recheck``) the folder went away meanwhile.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    held = False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        recheck()
        held = True
    finally:
        if not held:  # the lock or the recheck failed (or was interrupted): nothing is held
            os.close(fd)
    return fd


def _current_folders(settings: SandboxSettings) -> tuple[set[str], set[str]]:
    """(names of this checkout's runtimes plus ``base``, their current folder names)."""
    names = {"base"}
    current = {f"base-{base_tag(settings).rpartition(':')[2]}"}
    for image in find_images(settings).values():
        runtime = load_runtime(image.path)
        if runtime is None:
            continue
        names.add(runtime.name)
        current.add(rootfs_path(runtime, settings).name)
    return names, current


def prune_rootfs(settings: SandboxSettings, *, dry_run: bool = False) -> PruneReport:
    """Remove stale root filesystems of this checkout's runtimes (see the module docstring).

    Raises:
        InfraError: a runtime definition of this checkout is malformed.
    """
    report = PruneReport()
    names, current = _current_folders(settings)
    folder = cache_dir() / "rootfs"
    if not folder.is_dir():
        return report
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name in current or not entry.is_dir():
            continue
        match = _FOLDER.match(entry.name)
        if match is None:
            continue
        name = "base" if match["name"].startswith("base-") else match["name"]
        if name not in names:
            report.unknown.append(entry.name)
            continue
        with _locked(name):  # no build of this runtime renames a folder meanwhile
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    report.in_use.append(entry.name)
                    continue
                if not dry_run:
                    shutil.rmtree(entry)
                report.removed.append(entry.name)
            finally:
                os.close(fd)
    return report


def prune_images(client: Any, settings: SandboxSettings, *, dry_run: bool = False) -> PruneReport:
    """Remove stale ``<prefix>/<name>:<hash>`` tags of this checkout's images and bases."""
    import docker.errors

    report = PruneReport()
    current = {image_tag(image, settings) for image in find_images(settings).values()}
    current.add(base_tag(settings))
    repositories = {f"{settings.image_prefix}/{name}" for name in find_images(settings)}
    repositories.add(f"{settings.image_prefix}/base")
    for repository in sorted(repositories):
        for image in client.images.list(name=repository):
            for tag in image.tags:
                repo, _, version = tag.rpartition(":")
                if repo != repository or version == "latest" or tag in current:
                    continue
                if not dry_run:
                    try:
                        client.images.remove(tag)
                    except docker.errors.APIError as exc:  # a container runs it
                        if getattr(exc, "status_code", None) == 409 or "in use" in str(exc):
                            report.in_use.append(tag)
                            continue
                        raise
                report.removed.append(tag)
    return report
