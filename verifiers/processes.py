"""Killable worker processes for CPU-heavy verification (sympy, trimesh, pdf parsing).

:class:`ProcessPool` is what ``ctx.run_in_worker`` runs on. (Not the sandbox's runners, which
run model code: those are :mod:`verifiers.sandbox`'s; the old names
``verifiers.workers.WorkerPool`` and ``python -m verifiers._worker`` still work.)

Why processes and not threads: a runaway computation (a pathological mesh, a PDF that makes
pdfminer loop) cannot be interrupted inside a thread, and alarm signals break in threads
and Ray workers. A worker process can always be killed. Workers are persistent (imports are
paid once) and speak JSON lines over pipes, never pickle.

Why ``python -P``: ``python -m`` puts the caller's working directory first on ``sys.path``.
Started from a source checkout (the repository root, a notebook beside it), that made workers
import the source tree's ``verifiers/``, which lacks ``domains``, ``sandbox`` and
``rl_adapters`` (setuptools maps those from sibling folders), so every domain verifier failed
with "No module named 'verifiers.domains'". ``-P`` (Python 3.11+) leaves the working directory
off ``sys.path``; the worker then imports the same installed package as the caller, wherever
the caller runs. ``PYTHONPATH`` still applies, so plugins found through it keep working.

The pool is asyncio-native: :meth:`ProcessPool.call` waits for an idle worker, sends the job,
and awaits the reply under a timeout; on timeout the worker is killed (``VerifierTimeout``), on
memory exhaustion it is replaced (``ResourceExhausted``), on a crash it is replaced
(``InfraError``, which the engine retries).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import sys
from typing import Any

from .errors import (
    BadInput,
    InfraError,
    InvalidOutput,
    ResourceExhausted,
    VerifierError,
    VerifierTimeout,
)

__all__ = ["ProcessPool", "process_argv", "run_inline"]

_KINDS: dict[str, type[VerifierError]] = {
    "bad_input": BadInput,
    "infra": InfraError,
    "output": InvalidOutput,
    "timeout": VerifierTimeout,
    "verifier": VerifierError,
}


def process_argv() -> list[str]:
    """The command that starts one worker: this interpreter, cwd kept off ``sys.path``."""
    return [sys.executable, "-P", "-m", "verifiers._process_main"]


def run_inline(target: str, payload: Any) -> Any:
    """Run a worker target in this process (used when an engine has no pool, e.g. in tests)."""
    module_name, _, attr = target.partition(":")
    fn = getattr(importlib.import_module(module_name), attr)
    # JSON round trip so inline and pooled runs see exactly the same data.
    return json.loads(json.dumps(fn(json.loads(json.dumps(payload)))))


class _Process:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.jobs = 0

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()


class ProcessPool:
    """A bounded set of persistent worker processes.

    Args:
        size: Maximum concurrent workers (default: CPU count).
        memory_mb: Default address-space limit per job (``RLIMIT_AS``), in MiB.
        max_jobs: Replace a worker after this many jobs (bounds leaks in native code).
        line_limit: Largest reply accepted from a worker, in bytes.
    """

    def __init__(
        self,
        size: int | None = None,
        *,
        memory_mb: int = 4096,
        max_jobs: int = 500,
        line_limit: int = 256 * 1024 * 1024,
    ) -> None:
        self.size = max(1, size or os.cpu_count() or 1)
        self.memory_mb = memory_mb
        self.max_jobs = max_jobs
        self.line_limit = line_limit
        self._idle: list[_Process] = []
        self._slots = asyncio.Semaphore(self.size)
        self._all: set[_Process] = set()
        self._dead: list[_Process] = []
        self._closed = False

    async def _spawn(self) -> _Process:
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        env["PYTHONUNBUFFERED"] = "1"
        proc = await asyncio.create_subprocess_exec(
            *process_argv(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,
            env=env,
            limit=self.line_limit,
            start_new_session=True,
        )
        worker = _Process(proc)
        self._all.add(worker)
        return worker

    async def _take(self) -> _Process:
        while self._idle:
            worker = self._idle.pop()
            if worker.alive:
                return worker
            self._all.discard(worker)
        return await self._spawn()

    def _discard(self, worker: _Process) -> None:
        # Killed now, reaped in aclose (waiting here would block the caller).
        worker.kill()
        self._all.discard(worker)
        self._dead.append(worker)

    async def call(
        self, target: str, payload: Any, *, timeout: float, memory_mb: int | None = None
    ) -> Any:
        """Run ``target(payload)`` in a worker; see the module docstring for the errors."""
        if self._closed:
            raise InfraError("worker pool is closed")
        request = json.dumps(
            {"target": target, "payload": payload, "memory_mb": memory_mb or self.memory_mb}
        )
        async with self._slots:
            worker = await self._take()
            assert worker.proc.stdin is not None and worker.proc.stdout is not None
            try:
                worker.proc.stdin.write(request.encode() + b"\n")
                await worker.proc.stdin.drain()
                line = await asyncio.wait_for(worker.proc.stdout.readline(), max(timeout, 0.001))
            except TimeoutError:
                self._discard(worker)
                raise VerifierTimeout(f"worker job {target} exceeded {timeout:.1f}s") from None
            except (ConnectionError, ValueError, asyncio.LimitOverrunError) as exc:
                self._discard(worker)
                raise InfraError(f"worker pipe failed: {exc!r}") from None
            except asyncio.CancelledError:
                # Engine deadline or shutdown: the job may still be running; kill it.
                self._discard(worker)
                raise
            if not line:
                code = await worker.proc.wait()
                self._all.discard(worker)
                raise InfraError(f"worker process died (exit status {code}) running {target}")
            response = json.loads(line)
            worker.jobs += 1
            if response.get("ok"):
                self._recycle(worker)
                return response["value"]
            kind = response.get("kind", "verifier")
            if kind == "memory":
                self._discard(worker)
                limit = memory_mb or self.memory_mb
                raise ResourceExhausted(f"{target} exceeded the worker memory limit ({limit} MiB)")
            self._recycle(worker)
            raise _KINDS.get(kind, VerifierError)(
                response.get("message", "worker error"), hint=response.get("hint")
            )

    def _recycle(self, worker: _Process) -> None:
        if worker.jobs >= self.max_jobs or self._closed:
            self._discard(worker)
        else:
            self._idle.append(worker)

    async def aclose(self) -> None:
        """Stop every worker."""
        self._closed = True
        for worker in list(self._all):
            if worker.proc.stdin is not None:
                with contextlib.suppress(Exception):
                    worker.proc.stdin.close()
            worker.kill()
            with contextlib.suppress(Exception):
                await worker.proc.wait()
        for worker in self._dead:
            with contextlib.suppress(Exception):
                await worker.proc.wait()
        self._all.clear()
        self._idle.clear()
        self._dead.clear()
