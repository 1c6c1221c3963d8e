"""The sandbox contract: run argv in isolation, get an ExecResult back.

A failing command is a *result* (non-zero ``returncode``, ``timed_out``, ``oom_killed``);
only a broken provider raises (``SandboxUnavailable`` / ``InfraError``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Self, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field

from verifiers._lifecycle import AsyncContext
from verifiers.errors import BadInput

if TYPE_CHECKING:
    from ._settings import SandboxSettings

__all__ = ["ExecResult", "LimitOverrides", "Limits", "Sandbox", "SandboxProvider"]


class Limits(BaseModel):
    """Resource limits for one job. Defaults are deliberately small: RL rollouts are short."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(default=10.0, gt=0)
    """Wall-clock limit; the job's whole process group is killed when it passes."""
    memory_mb: int = Field(default=512, gt=0)
    """Address-space / cgroup memory limit of the job."""
    cpu_s: float | None = None
    """CPU-time limit (RLIMIT_CPU); defaults to ``timeout_s`` + 1. This is the model's budget:
    load does not move it. ``timeout_s`` is the wall backstop; when it fires on a job the
    machine starved, the result is ``starved`` (an abstain), not the model's timeout."""
    pids: int = Field(default=64, gt=0)
    """Maximum processes/threads of the job."""
    output_bytes: int = Field(default=1 << 20, gt=0)
    """Cap on captured stdout and on stderr each; the rest is dropped and ``truncated`` set."""
    file_bytes: int = Field(default=64 << 20, gt=0)
    """Largest file the job may write (RLIMIT_FSIZE)."""


class ExecResult(BaseModel):
    """What one command did. Never raised: inspect the fields."""

    model_config = ConfigDict(frozen=True)

    returncode: int
    """Exit status; negative for death by signal (``-9`` for SIGKILL)."""
    stdout: bytes = b""
    stderr: bytes = b""
    truncated: bool = False
    """Output went past ``Limits.output_bytes`` and was cut."""
    timed_out: bool = False
    """The job was killed at ``Limits.timeout_s`` (wall) or by its CPU budget (``cpu_s``)."""
    oom_killed: bool = False
    """The job was killed for exceeding ``Limits.memory_mb``."""
    duration_s: float = 0.0
    cpu_s: float = 0.0
    """User + system CPU seconds of the job and its children."""
    peak_memory_mb: float = 0.0
    """Peak resident memory of the job (max over its processes, as rusage reports)."""
    starved: bool = False
    """The job ran into its wall-clock backstop because the *machine* starved it of CPU
    (runnable but waiting while others used the CPUs), not through anything it did: its
    outcome is no score (see docs/sandbox.md, "Deadlines"). Implies ``timed_out``."""
    starvation: dict[str, float | int | bool] | None = None
    """The evidence behind ``starved`` when the wall backstop fired: ``wall_s``, ``cpu_s``,
    ``run_delay_s``, ``others_cpu_s``, ``cpus``, ``lowered_priority``, ``all_cpu_counted``
    (whether ``cpu_s`` holds the CPU of every task the job had, dead ones included: never
    starved without it) (None otherwise)."""

    @property
    def ok(self) -> bool:
        """Exited 0, not killed, not truncated."""
        return self.returncode == 0 and not (self.timed_out or self.oom_killed)

    def text(self, stream: str = "stdout") -> str:
        """stdout/stderr decoded as UTF-8 with replacement."""
        data = self.stdout if stream == "stdout" else self.stderr
        return data.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Command:
    """One :meth:`Sandbox.exec` call, checked: what a backend's ``_exec`` runs."""

    argv: list[str]
    """The program and its arguments (non-empty, strings only)."""
    stdin: bytes | None
    env: dict[str, str]
    """Extra environment variables for the job."""
    cwd: str | None
    """Work-dir-relative directory to run in (None: the work dir)."""
    timeout: float | None
    """Overrides ``limits.timeout_s`` when given."""
    limits: Limits | None
    """This command's limits (None: the session's)."""
    preload: bytes | None = None
    """Trusted Python source a backend may run once in a warm process this command is then
    forked from (see :meth:`Sandbox.exec`); None: none."""


class Sandbox(AsyncContext, ABC):
    """An isolated place to run one job's commands, with its own work directory.

    Use as ``async with``: ``close`` releases the slot (and wipes the work dir).
    """

    async def exec(
        self,
        argv: list[str],
        *,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        limits: Limits | None = None,
        preload: bytes | None = None,
    ) -> ExecResult:
        """Run ``argv`` (never a shell string) in the work dir. ``timeout`` overrides
        ``limits.timeout_s``. Raises only when the provider itself fails.

        ``preload``: Python source *the caller* owns (a domain's constant harness, never
        model output: it runs outside the job, as the sandbox's runner user). A backend that
        forks Python jobs from a warm zygote (the runner's) may run it once in a fork of
        that zygote and fork this command from there when ``argv`` runs the runtime's
        interpreter plainly; the command must behave the same without it (backends are free
        to ignore it), so it can only make a start cheaper.

        Backends implement :meth:`_exec`, which gets the checked :class:`Command`: the
        signature and the argv check live here once (a backend may still override this).

        Raises:
            BadInput: ``argv`` is a string, empty, or holds something other than strings.
        """
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise BadInput("argv must be a non-empty list of strings (never a shell string)")
        return await self._exec(
            Command(list(argv), stdin, dict(env or {}), cwd, timeout, limits, preload)
        )

    async def _exec(self, command: Command) -> ExecResult:
        """Run one checked command (what a backend implements, unless it overrides exec)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither exec nor _exec")

    @abstractmethod
    async def write_files(self, files: dict[str, bytes | str], *, readonly: bool = False) -> None:
        """Write files (paths relative to the work dir). ``readonly`` makes the job unable to
        change or delete them (owned by another uid, mode 0444, in a 0555 directory)."""

    @abstractmethod
    async def read_file(self, path: str, *, max_bytes: int = 64 << 20) -> bytes:
        """Read a file the job wrote. Raises ``FileNotFoundError`` when absent and
        ``BadInput`` when larger than ``max_bytes``."""

    def prefetch(self, path: str, *, max_bytes: int = 64 << 20) -> None:
        """Say that ``read_file(path, max_bytes=max_bytes)`` will follow the next ``exec``.

        A hint, never a change of meaning: ``read_file`` returns or raises exactly what it
        would have without it. Runner backends carry the read in the exec's own frame, so a
        job whose outputs are read back costs one round trip instead of one per file (the
        render judge reads two files per session). Any write or other exec first drops it.
        The base class ignores it.
        """

    @abstractmethod
    async def close(self) -> None:
        """Release the sandbox; idempotent."""

    async def _exit(self) -> None:
        await self.close()


class LimitOverrides(TypedDict, total=False):
    """The :class:`Limits` fields a session may override (``session("python", timeout_s=5)``);
    validated by ``Limits`` itself, so an unknown or out-of-range value is ``BadInput``."""

    timeout_s: float
    memory_mb: int
    cpu_s: float | None
    pids: int
    output_bytes: int
    file_bytes: int


class SandboxProvider(ABC):
    """A sandbox backend: hands out one isolated :class:`Sandbox` per job.

    Every backend (``docker``, ``local``, ``fake``, and third-party ones registered through the
    ``verifiers.sandboxes`` entry-point group, see :mod:`verifiers.sandbox._registry`)
    implements this. ``session`` raises ``SandboxUnavailable`` (with a hint naming the fix)
    when the backend or the runtime cannot work, before any job runs; a failing command is an
    :class:`ExecResult`, never an exception.
    """

    kind: ClassVar[str] = ""
    """The registry name of the backend."""

    @classmethod
    def from_settings(cls, settings: SandboxSettings) -> Self:
        """Construct the backend from shared settings (what ``open_provider`` calls)."""
        return cls(settings)  # type: ignore[call-arg]

    @classmethod
    def probe(cls, settings: SandboxSettings) -> tuple[bool, str]:
        """Whether the backend can work on this host, and a one-line detail (cheap; no jobs)."""
        return True, ""

    @abstractmethod
    def session(
        self, image: str = "python", **limits: Unpack[LimitOverrides]
    ) -> AbstractAsyncContextManager[Sandbox]:
        """A fresh sandbox of runtime ``image`` for one job (``async with``)."""

    @abstractmethod
    async def close(self) -> None:
        """Stop every container or runner the provider owns; idempotent."""

    def status(self) -> dict[str, int]:
        """Counts a backend reports (idle/busy workers); empty when it keeps none."""
        counts = getattr(self, "counts", None)
        return dict(counts()) if callable(counts) else {}
