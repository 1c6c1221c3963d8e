"""How a runtime's runner is launched: its interpreter, its zygote preload, its memory.

Read from the runtime's one definition, ``sandbox/images/<name>/runtime.toml`` (see
:mod:`verifiers.sandbox._runtimes`): ``venv``/``python`` give the interpreter, ``preload`` a
file run once in the zygote (blender: ``import bpy``), ``overhead_mb`` the zygote's memory added
to a container's cgroup limit. Both backends read the same file, so a runtime behaves the same
on each: jobs that run the runtime's interpreter plainly (``python FILE``) are forks of a
zygote that ran ``preload`` (see ``_runner._run_preload``), with the session's own uid,
rlimits and work dir. A folder without ``runtime.toml`` (a Dockerfile-only image) starts the
default runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verifiers.errors import SandboxUnavailable

from ._images import ImageDef

__all__ = ["RunnerLaunch", "runner_launch"]

DEFAULT_PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class RunnerLaunch:
    """What a runtime's ``runtime.toml`` says about its runner (defaults: a plain python3 runner)."""

    python: str = DEFAULT_PYTHON
    """Interpreter of the runner (and of fast-path jobs) inside the image."""
    local_python: Path | None = None
    """The same interpreter on the host, for the local backend (None: the default one)."""
    local_hint: str = ""
    """How to install ``local_python`` when it is missing."""
    preload: str = ""
    """Source the zygote runs once before any job (empty: none)."""
    overhead_mb: int = 0
    """Memory the preloaded zygote keeps resident, added to a container's cgroup limit."""
    env: tuple[tuple[str, str], ...] = ()
    """The runtime's own job environment (``[runtime.env]``), on top of ``JOB_ENV``."""

    def local_interpreter(self) -> Path | None:
        """``local_python`` when set.

        Raises:
            SandboxUnavailable: it is set but missing (with ``local_hint``).
        """
        if self.local_python is None:
            return None
        if not self.local_python.exists():
            raise SandboxUnavailable(
                f"the runtime's interpreter {self.local_python} is missing",
                hint=self.local_hint or "build the runtime (see docs/sandbox.md)",
                retryable=False,
            )
        return self.local_python


def runner_launch(image: ImageDef) -> RunnerLaunch:
    """The launch settings of ``image`` (from its ``runtime.toml``, or the defaults).

    Raises:
        SandboxUnavailable: the definition is malformed (a broken runtime, never a job's fault).
    """
    from verifiers.errors import InfraError

    from ._runtimes import load_runtime

    try:
        runtime = load_runtime(image.path)
        preload = ""
        if runtime is not None and runtime.preload:
            preload = (image.path / runtime.preload).read_text(encoding="utf-8")
    except (InfraError, OSError) as exc:
        raise SandboxUnavailable(
            f"runtime definition of {image.name!r} is invalid: {exc}",
            hint=f"fix {image.path / 'runtime.toml'} (see docs/sandbox.md)",
            retryable=False,
        ) from None
    if runtime is None:
        return RunnerLaunch()
    return RunnerLaunch(
        python=runtime.interpreter,
        preload=preload,
        overhead_mb=runtime.overhead_mb,
        env=tuple(sorted(runtime.env.items())),
    )
