"""What a verifier gets besides its input: deadline, worker processes, sandboxes, files.

Resource accounting lives here because every sandboxed job passes through
:meth:`VerifierContext.sandbox`: each ``exec`` of a sandbox it hands out is recorded (wall
time, CPU seconds, peak memory, which limit it hit), and the engine stamps the totals on the
item's result as ``details["resources"]`` (see :meth:`VerifierContext.account`). So every
domain gets the same numbers without writing any code, and the reward server can export them
per verifier and runtime (operators watch them for loops and leaks).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from .errors import BadInput, SandboxUnavailable
from .types import Result, Trajectory

if TYPE_CHECKING:
    from verifiers.sandbox._base import LimitOverrides, Sandbox

    from .workers import WorkerPool

__all__ = ["SandboxProvider", "VerifierContext"]


class SandboxProvider(Protocol):
    """What ``verifiers.sandbox`` provides to the engine.

    The structural side of ``verifiers.sandbox.SandboxProvider`` (the ABC every backend
    implements).

    ``session`` hands out an isolated sandbox for one job: a fresh work directory in a warm
    container or local runner, released on exit of the ``async with`` block.
    """

    def session(
        self, image: str = "python", **limits: Unpack[LimitOverrides]
    ) -> AbstractAsyncContextManager[Sandbox]:
        """An isolated sandbox for one job."""
        ...

    async def close(self) -> None:
        """Stop every container or runner the provider owns."""
        ...


class VerifierContext:
    """Per-item context passed to :meth:`Verifier.verify`.

    Attributes:
        deadline: ``time.monotonic()`` value after which the engine cancels the item.
        base_dir: Directory relative artifact and document paths are resolved against (the
            input file's directory).
        logger: Logger for diagnostics (never for results).
        line: 1-based line number of the item in its input file, if any.
    """

    def __init__(
        self,
        *,
        deadline: float,
        base_dir: Path,
        workers: WorkerPool | None = None,
        sandboxes: SandboxProvider | None = None,
        logger: logging.Logger | None = None,
        line: int | None = None,
        max_artifact_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.deadline = deadline
        self.base_dir = base_dir
        self.logger = logger or logging.getLogger("verifiers")
        self.line = line
        self.max_artifact_bytes = max_artifact_bytes
        self._workers = workers
        self._sandboxes = sandboxes
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._jobs: list[tuple[str, Any]] = []

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.deadline - time.monotonic())

    # -- worker processes --------------------------------------------------------------

    async def run_in_worker(
        self,
        target: str,
        payload: Any,
        *,
        timeout: float | None = None,
        memory_mb: int | None = None,
    ) -> Any:
        """Run ``target`` (``"package.module:function"``) on ``payload`` in a worker process.

        The payload and the return value travel as JSON (never pickle). The worker is killed
        when ``timeout`` (default: the time left before the deadline) passes or when it
        exceeds ``memory_mb``; that raises ``VerifierTimeout`` / ``InfraError``. An exception
        raised by ``target`` comes back as the same ``VerifierError`` kind.
        """
        if self._workers is None:
            from .workers import run_inline

            return run_inline(target, payload)
        budget = self.remaining() if timeout is None else min(timeout, self.remaining())
        return await self._workers.call(target, payload, timeout=budget, memory_mb=memory_mb)

    # -- sandboxes ---------------------------------------------------------------------

    @property
    def sandbox_provider(self) -> SandboxProvider | None:
        """The item's own sandbox provider (None when the engine has none), read-only.

        For a verifier that serves several items through one sandbox job of their shared
        provider (``game.godot``'s fork server batches the checks of a group on it): key
        what it shares by this object, and open jobs through :meth:`sandbox` of a context
        built on it. Jobs opened on the provider directly are not recorded in this item's
        :meth:`resources`; :meth:`sandbox` is the way for everything else.
        """
        return self._sandboxes

    def sandbox(
        self, image: str = "python", **limits: Unpack[LimitOverrides]
    ) -> AbstractAsyncContextManager[Sandbox]:
        """An isolated sandbox of runtime ``image`` for one job.

        Use it as ``async with ctx.sandbox("python") as sb``: a typed
        :class:`verifiers.sandbox.Sandbox`.

        Raises:
            SandboxUnavailable: the engine was built without a sandbox provider.
        """
        if self._sandboxes is None:
            raise SandboxUnavailable(
                "no sandbox provider configured", hint="run with --sandbox auto|docker|local"
            )
        # Opened now, so an unknown or unbuilt runtime raises here, before any job runs.
        session = self._sandboxes.session(image, **limits)
        return self._accounted(image, session)

    @asynccontextmanager
    async def _accounted(
        self, image: str, session: AbstractAsyncContextManager[Sandbox]
    ) -> AsyncIterator[Sandbox]:
        async with session as sandbox:
            original = sandbox.exec

            async def exec_and_record(argv: list[str], **kwargs: Any) -> Any:
                result = await original(argv, **kwargs)
                self._jobs.append((image, result))
                return result

            sandbox.exec = exec_and_record  # type: ignore[method-assign]
            try:
                yield sandbox
            finally:
                sandbox.exec = original  # type: ignore[method-assign]

    def resources(self) -> dict[str, Any] | None:
        """Totals over the sandbox jobs of this item (None when it ran none).

        ``wall_s`` and ``cpu_s`` are sums, ``peak_memory_mb`` the largest job's peak,
        ``limit_hit`` the limits jobs ran into (``memory``, ``output``, ``timeout``, and
        ``wall-starved`` for a job the machine starved into its wall backstop, see
        :meth:`starved`; empty when none), ``runtimes`` the runtimes used.
        """
        if not self._jobs:
            return None
        hit: set[str] = set()
        for _, job in self._jobs:
            for limit, flag in (("timeout", "timed_out"), ("memory", "oom_killed")):
                if getattr(job, flag, False):
                    hit.add("wall-starved" if getattr(job, "starved", False) else limit)
            if getattr(job, "truncated", False):
                hit.add("output")
        return {
            "jobs": len(self._jobs),
            "wall_s": round(sum(float(getattr(j, "duration_s", 0.0)) for _, j in self._jobs), 4),
            "cpu_s": round(sum(float(getattr(j, "cpu_s", 0.0)) for _, j in self._jobs), 4),
            "peak_memory_mb": round(
                max(float(getattr(j, "peak_memory_mb", 0.0)) for _, j in self._jobs), 2
            ),
            "limit_hit": sorted(hit),
            "runtimes": sorted({image for image, _ in self._jobs}),
        }

    def starved(self) -> list[Any]:
        """The item's sandbox jobs the machine starved into their wall backstop.

        ``ExecResult.starved``: their outcome says nothing about the model, so the engine
        never lets a ``fail`` stand on them.
        """
        return [job for _, job in self._jobs if getattr(job, "starved", False)]

    def account(self, result: Result) -> Result:
        """``result`` with ``details["resources"]`` set when this item ran sandbox jobs."""
        resources = self.resources()
        if resources is None:
            return result
        return result.model_copy(update={"details": {**result.details, "resources": resources}})

    # -- files ---------------------------------------------------------------------------

    def resolve_path(self, relative: str) -> Path:
        """A path from a trajectory, resolved against ``base_dir``; must exist.

        Raises:
            BadInput: the file is missing or the path escapes ``base_dir``.
        """
        base = self.base_dir.resolve()
        path = (base / relative).resolve()
        if base != path and base not in path.parents:
            raise BadInput(f"path {relative!r} escapes the input file's directory {str(base)!r}")
        if not path.is_file():
            raise BadInput(f"file {relative!r} not found (looked at {str(path)!r})")
        return path

    def artifact_path(self, trajectory: Trajectory, name: str) -> Path:
        """Path to the artifact ``name`` on disk (inline base64 is written to a temp file).

        Raises:
            BadInput: no such artifact, bad base64, too large, or a missing file.
        """
        artifact = trajectory.artifacts.get(name)
        if artifact is None:
            have = ", ".join(sorted(trajectory.artifacts)) or "none"
            raise BadInput(f"artifact {name!r} not in trajectory (artifacts: {have})")
        if artifact.path is not None:
            path = self.resolve_path(artifact.path)
            if path.stat().st_size > self.max_artifact_bytes:
                raise BadInput(f"artifact {name!r} is larger than {self.max_artifact_bytes} bytes")
            return path
        data = self._decode(name, artifact.base64 or "")
        suffix = Path(artifact.name).suffix if artifact.name else ""
        digest = hashlib.sha256(data).hexdigest()[:16]
        if self._tempdir is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="verifiers-artifacts-")
        path = Path(self._tempdir.name) / f"{digest}{suffix}"
        path.write_bytes(data)
        return path

    def artifact_bytes(self, trajectory: Trajectory, name: str) -> bytes:
        """The artifact's content (see :meth:`artifact_path` for errors)."""
        artifact = trajectory.artifacts.get(name)
        if artifact is not None and artifact.base64 is not None:
            return self._decode(name, artifact.base64)
        return self.artifact_path(trajectory, name).read_bytes()

    def _decode(self, name: str, text: str) -> bytes:
        if len(text) * 3 // 4 > self.max_artifact_bytes:
            raise BadInput(f"artifact {name!r} is larger than {self.max_artifact_bytes} bytes")
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadInput(f"artifact {name!r} is not valid base64: {exc}") from None

    def cleanup(self) -> None:
        """Remove temporary files made for this item (called by the engine)."""
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None
