"""Pre-flight for ``verifiers score``: build the runtimes an input file needs, once, first.

Without it a runtime that is not built makes every item that needs it ``error/infra`` with the
hint ``run `verifiers sandbox build NAME```. That stays the rule everywhere a build must not
happen by surprise (trainer adapters, ``verifiers serve``, the Python API): a build takes
minutes, needs root and network, and must never run inside a training step's deadline. The
CLI, run by a person at a terminal, does better: before scoring starts it finds which runtimes
the file's verifiers ask for, builds the missing ones that this backend can build here, with
progress on stderr, then scores. ``--no-build`` turns that off. When every runtime defined here
is built (a stat per runtime, or one image lookup each), the pre-flight ends there.

Which runtimes a file needs is learnt from the verifiers themselves, not from a table kept
beside them: each probed item runs through a real engine whose sandbox provider records the
runtime ``ctx.sandbox(name)`` asks for and refuses the session (so no model code runs and the
item ends there, before any job). The probe is bounded: a verifier whose first
:data:`_QUIET_ITEMS` items ask for no sandbox is not probed further (it needs none), and at
most :data:`_MAX_PROBED` items are probed in all (a runtime first needed further down the
file is still ``error/infra`` with the hint, as without the pre-flight); it reads at most
:data:`_MAX_READ` lines.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any

from verifiers.errors import SandboxUnavailable, VerifierError

from ._base import Sandbox, SandboxProvider
from ._settings import SandboxSettings

__all__ = ["build_missing", "missing_runtimes", "runtimes_needed"]

_QUIET_ITEMS = 3
"""Items of a verifier that asked for no sandbox after which it is not probed further."""
_MAX_PROBED = 500
"""Items probed in all (each costs the verifier's work up to its first ``ctx.sandbox``)."""
_MAX_READ = 5000
"""Lines read in all (a file of verifiers that need no sandbox is not read to its end)."""


class _Probe(SandboxUnavailable):
    """Raised by the recording provider in place of a session (never leaves the probe)."""


class _RecordingProvider(SandboxProvider):
    """Records the runtime each ``session`` asks for and refuses it: no job ever runs."""

    kind = "preflight"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def session(self, image: str = "python", **limits: Any) -> AbstractAsyncContextManager[Sandbox]:
        self.asked.append(image)
        raise _Probe(f"pre-flight: records runtime {image!r}", retryable=False)

    async def close(self) -> None:
        return None


async def runtimes_needed(items: Iterable[Any]) -> list[str]:
    """The runtimes the verifiers of ``items`` (trajectories) ask for, in first-use order.

    Items that are not trajectories (a broken line's error result) are skipped.
    """
    from verifiers.engine import Engine, EngineSettings
    from verifiers.types import Trajectory

    recorder = _RecordingProvider()
    quiet: Counter[str] = Counter()
    sandboxed: set[str] = set()
    found: list[str] = []
    settings = EngineSettings(cache=False, retries=0, concurrency=1, sandbox="none")
    probed = 0
    async with Engine(settings, sandboxes=recorder) as engine:
        for read, item in enumerate(items):
            if probed >= _MAX_PROBED or read >= _MAX_READ:
                break
            if not isinstance(item, Trajectory):
                continue
            names = _verifier_names(item)
            if names and all(n not in sandboxed and quiet[n] >= _QUIET_ITEMS for n in names):
                continue
            probed += 1
            before = len(recorder.asked)
            await engine.score([item])
            asked = recorder.asked[before:]
            for name in names:
                if asked:
                    sandboxed.add(name)
                else:
                    quiet[name] += 1
            found.extend(a for a in asked if a not in found)
    return found


def _verifier_names(item: Any) -> list[str]:
    task = item.task
    names = [task.verifier] if getattr(task, "verifier", None) else []
    names += [c.verifier for c in getattr(task, "checks", None) or []]
    return [str(n) for n in names]


def missing_runtimes(names: Iterable[str], backend: str, settings: SandboxSettings) -> list[str]:
    """Those of ``names`` that ``backend`` (``docker`` or ``local``) has no built copy of.

    Names with no definition are left out: the session itself reports them, with the list of
    known runtimes.
    """
    from ._images import find_images, image_tag
    from ._runtimes import MARKER, load_runtime, rootfs_path

    images = find_images(settings)
    missing: list[str] = []
    client: Any = None
    if backend == "docker":
        from ._docker import connect

        client = connect(settings, timeout=30)
    try:
        for name in names:
            image = images.get(name)
            if image is None:
                continue
            if client is not None:
                try:
                    client.images.get(image_tag(image, settings))
                    continue
                except Exception:  # ImageNotFound (or the engine failing: the build says)
                    missing.append(name)
                    continue
            runtime = load_runtime(image.path)
            if runtime is not None and not (rootfs_path(runtime, settings) / MARKER).is_file():
                missing.append(name)
    finally:
        if client is not None:
            client.close()
    return missing


def build_missing(
    names: list[str], backend: str, settings: SandboxSettings, say: Callable[[str], None]
) -> list[str]:
    """Build each runtime of ``names`` for ``backend``, saying what happens; returns the names
    that could not be built here (their items stay ``error/infra`` with the hint).

    Each line of the build's progress goes to ``say``, prefixed with the elapsed time, so a
    several-minute build is never silent.
    """
    from ._images import build_image, find_images
    from ._runtimes import build_rootfs, load_runtime

    images = find_images(settings)
    failed: list[str] = []
    client: Any = None
    for name in names:
        started = time.monotonic()

        def progress(line: str, started: float = started, name: str = name) -> None:
            say(f"[{time.monotonic() - started:6.1f}s] {name}: {line}")

        say(f"runtime {name!r} is not built for --sandbox {backend}: building it now (once)")
        try:
            if backend == "docker":
                if client is None:
                    from ._docker import connect

                    client = connect(settings, timeout=1800)
                build_image(client, images[name], settings, progress)
            else:
                runtime = load_runtime(images[name].path)
                if runtime is None:
                    raise SandboxUnavailable(
                        f"{name!r} is a Dockerfile-only image: the local backend cannot run it",
                        hint="use --sandbox docker",
                    )
                build_rootfs(runtime, settings, progress)
        except VerifierError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            say(f"runtime {name!r} could not be built here: {exc.message}{hint}")
            failed.append(name)
            continue
        say(f"runtime {name!r} built in {time.monotonic() - started:.1f}s")
    if client is not None:
        client.close()
    return failed


def preflight(items: Iterable[Any], sandbox: str, say: Callable[[str], None]) -> None:
    """The CLI's pre-flight (see the module docstring): probe, then build what is missing.

    ``sandbox`` is the CLI's ``--sandbox`` value; ``none``, ``fake`` and third-party backends
    build nothing here.
    """
    settings = SandboxSettings()
    backend = sandbox
    if backend == "auto":
        from . import docker_ready

        backend = "docker" if docker_ready(settings) else "local"
    if backend not in ("docker", "local"):
        return
    from ._images import find_images

    try:
        # Cheap first (a stat or an image lookup per runtime): with every runtime built,
        # there is nothing to probe for, and scoring starts at once.
        unbuilt = set(missing_runtimes(sorted(find_images(settings)), backend, settings))
    except VerifierError:  # no engine: scoring reports it (fail-fast, one line, the fix)
        return
    if not unbuilt:
        return
    missing = [name for name in asyncio.run(runtimes_needed(items)) if name in unbuilt]
    if missing:
        build_missing(missing, backend, settings, say)
