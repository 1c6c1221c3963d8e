"""A fake sandbox for unit tests of verifiers: no process runs, a handler decides the result.

Example::

    def handler(call: FakeCall) -> ExecResult:
        if call.argv[:2] == ["python3", "-m"]:
            return ExecResult(returncode=0, stdout=b"3 passed")
        return ExecResult(returncode=1, stderr=b"unexpected")

    provider = FakeProvider(handler)
    engine = Engine(settings, sandboxes=provider)
    ...
    assert provider.calls[0].files["solution.py"] == b"def f(): ..."
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from verifiers.errors import BadInput, InfraError

from ._base import Command, ExecResult, Limits, Sandbox, SandboxProvider
from ._client import merge_limits
from ._settings import SandboxSettings

__all__ = ["FakeCall", "FakeProvider", "FakeSandbox"]


@dataclass(frozen=True)
class FakeCall:
    """One ``exec`` as the fake saw it, with a snapshot of the work dir at that moment."""

    argv: list[str]
    stdin: bytes | None
    env: dict[str, str]
    cwd: str | None
    timeout: float
    limits: Limits
    image: str
    files: dict[str, bytes] = field(default_factory=dict)
    readonly: frozenset[str] = frozenset()


Handler = Callable[[FakeCall], "ExecResult | Awaitable[ExecResult]"]


def _default_handler(call: FakeCall) -> ExecResult:
    return ExecResult(returncode=0)


class FakeSandbox(Sandbox):
    """In-memory work dir; ``exec`` calls ``handler`` (sync or async) with a :class:`FakeCall`.

    ``handler`` may also mutate ``sandbox.files`` through the FakeSandbox it is bound to
    (``FakeProvider.sandboxes[-1]``) to simulate files the job wrote.
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        image: str = "python",
        limits: Limits | None = None,
        calls: list[FakeCall] | None = None,
    ) -> None:
        self.handler = handler or _default_handler
        self.image = image
        self.limits = limits or Limits()
        self.files: dict[str, bytes] = {}
        self.readonly: set[str] = set()
        self.calls: list[FakeCall] = calls if calls is not None else []
        self.closed = False

    def _check(self) -> None:
        if self.closed:
            raise InfraError("sandbox session is closed")

    @staticmethod
    def _normalise(path: str) -> str:
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if path.startswith("/") or ".." in parts or not parts:
            raise BadInput(f"bad sandbox path {path!r}")
        return "/".join(parts)

    async def _exec(self, command: Command) -> ExecResult:
        self._check()
        lim = command.limits or self.limits
        call = FakeCall(
            argv=command.argv,
            stdin=command.stdin,
            env=command.env,
            cwd=command.cwd,
            timeout=command.timeout if command.timeout is not None else lim.timeout_s,
            limits=lim,
            image=self.image,
            files=dict(self.files),
            readonly=frozenset(self.readonly),
        )
        self.calls.append(call)
        outcome = self.handler(call)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if not isinstance(outcome, ExecResult):
            raise TypeError("FakeSandbox handler must return an ExecResult")
        return outcome

    async def write_files(self, files: dict[str, bytes | str], *, readonly: bool = False) -> None:
        self._check()
        for name, data in files.items():
            key = self._normalise(name)
            self.files[key] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            if readonly:
                self.readonly.add(key)
            else:
                self.readonly.discard(key)

    async def read_file(self, path: str, *, max_bytes: int = 64 << 20) -> bytes:
        self._check()
        key = self._normalise(path)
        if key not in self.files:
            raise FileNotFoundError(path)
        data = self.files[key]
        if len(data) > max_bytes:
            raise BadInput(f"{path!r} is larger than {max_bytes} bytes")
        return data

    async def close(self) -> None:
        self.closed = True


class FakeProvider(SandboxProvider):
    """A provider whose sessions are :class:`FakeSandbox` objects sharing one handler.

    Attributes:
        calls: Every exec of every session, in order.
        sandboxes: Every session's sandbox, in order (inspect ``files`` after the run).
    """

    kind = "fake"

    @classmethod
    def from_settings(cls, settings: SandboxSettings) -> FakeProvider:
        """A fake with the default handler (settings do not apply: nothing runs)."""
        return cls()

    @classmethod
    def probe(cls, settings: SandboxSettings) -> tuple[bool, str]:
        return True, "for tests: runs nothing"

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler = handler
        self.calls: list[FakeCall] = []
        self.sandboxes: list[FakeSandbox] = []
        self.closed = False

    def session(self, image: str = "python", **limits: Any) -> AbstractAsyncContextManager[Any]:
        """A fresh :class:`FakeSandbox` (limits are validated like the real backends do)."""
        merged = merge_limits(Limits(), limits)
        return self._session(image, merged)

    @asynccontextmanager
    async def _session(self, image: str, limits: Limits) -> AsyncIterator[FakeSandbox]:
        if self.closed:
            raise InfraError("fake sandbox provider is closed")
        sandbox = FakeSandbox(self.handler, image=image, limits=limits, calls=self.calls)
        self.sandboxes.append(sandbox)
        try:
            yield sandbox
        finally:
            await sandbox.close()

    async def close(self) -> None:
        self.closed = True
