"""Helpers for the code.tests tests: a bare subprocess sandbox (logic tests) and the real backends.

``SubprocessSandbox`` runs jobs as plain host subprocesses: no isolation at all. It exists
only so the verifier's own logic (extraction, the judge, comparisons, feedback) is tested on
every machine; the integration with the real sandboxes is tested by the ``bwrap`` (local
backend) and ``docker`` tests, which CI runs.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from verifiers.domains.code import CodeTests
from verifiers.sandbox import ExecResult, Limits, Sandbox

from verifiers.context import VerifierContext
from verifiers.types import Result, Trajectory


class SubprocessSandbox(Sandbox):
    """Runs argv in a temp dir with the test interpreter as ``python3``. No isolation."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.dir = Path(tempfile.mkdtemp(prefix="code-tests-"))

    async def exec(
        self,
        argv: list[str],
        *,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        limits: Limits | None = None,
    ) -> ExecResult:
        argv = [sys.executable if a == "python3" and i == 0 else a for i, a in enumerate(argv)]
        limit = timeout or (limits or self.limits).timeout_s
        t0 = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.dir,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        timed_out = False
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin or b""), limit)
        except TimeoutError:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = await proc.communicate()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        cap = self.limits.output_bytes
        return ExecResult(
            returncode=proc.returncode if proc.returncode is not None else -9,
            stdout=out[:cap],
            stderr=err[:cap],
            truncated=len(out) > cap or len(err) > cap,
            timed_out=timed_out,
            duration_s=time.monotonic() - t0,
        )

    async def write_files(self, files: dict[str, bytes | str], *, readonly: bool = False) -> None:
        for rel, data in files.items():
            path = self.dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                path.chmod(0o644)
            path.write_bytes(data.encode() if isinstance(data, str) else data)
            if readonly:
                path.chmod(0o444)

    async def read_file(self, path: str, *, max_bytes: int = 64 << 20) -> bytes:
        return (self.dir / path).read_bytes()[:max_bytes]

    async def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class SubprocessProvider:
    """``SandboxProvider`` handing out :class:`SubprocessSandbox` sessions."""

    def session(self, image: str = "python", **limits: Any) -> AbstractAsyncContextManager[Any]:
        return self._session(Limits(**limits))

    @asynccontextmanager
    async def _session(self, limits: Limits) -> AsyncIterator[SubprocessSandbox]:
        sb = SubprocessSandbox(limits)
        try:
            yield sb
        finally:
            await sb.close()

    async def close(self) -> None:
        return None


async def score_with(
    provider: Any, item: dict[str, Any] | Trajectory, deadline_s: float = 120
) -> Result:
    """Validate the spec and run ``code.tests`` on one trajectory, as the engine would."""
    traj = item if isinstance(item, Trajectory) else Trajectory.model_validate(item)
    verifier = CodeTests()
    spec = CodeTests.Spec.model_validate(traj.task.spec or {})
    ctx = VerifierContext(
        deadline=time.monotonic() + deadline_s, base_dir=Path("."), sandboxes=provider
    )
    return await verifier.verify(traj, spec, ctx)  # type: ignore[arg-type]


class Backend:
    """A real sandbox provider bound to one event loop that lives as long as the fixture, so
    the warm pool survives across tests (a pool cannot move between loops)."""

    def __init__(self, kind: str) -> None:
        from verifiers.sandbox import open_provider

        self.runner = asyncio.Runner()
        self.kind = kind
        self.provider: Any = SubprocessProvider() if kind == "subprocess" else open_provider(kind)  # type: ignore[arg-type]

    def score(self, item: dict[str, Any] | Trajectory, deadline_s: float = 120) -> Result:
        return self.runner.run(score_with(self.provider, item, deadline_s))

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)

    def close(self) -> None:
        try:
            self.runner.run(self.provider.close())
        finally:
            self.runner.close()


def traj(code: str, tests: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A trajectory whose completion is ``code`` in a python fence."""
    return {
        "id": "t",
        "completion": f"Solution:\n```python\n{code}\n```\n",
        "task": {"verifier": "code.tests", "spec": {"tests": tests, **spec}},
    }
