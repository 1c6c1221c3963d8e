"""Helpers the sandbox tests share (imported by name: pytest puts this folder on the path)."""

from __future__ import annotations

import asyncio
from typing import Any

from verifiers.sandbox._client import Channel

from verifiers.engine import Engine, EngineSettings
from verifiers.types import Result


def score_rows(provider: Any, rows: list[dict[str, Any]], **settings: Any) -> list[Result]:
    """Score ``rows`` in one real engine run on ``provider``, then close it. Engine settings
    default to one item at a time, no retries (an abstain shows as ``error``), 120 s each."""

    async def main() -> list[Result]:
        try:
            config = EngineSettings(
                **{"concurrency": 1, "retries": 0, "timeout_s": 120, **settings}
            )
            async with Engine(config, sandboxes=provider) as engine:
                return await engine.score(rows)
        finally:
            await provider.close()

    return asyncio.run(main())


class NoChannel(Channel):
    """The channel of a stand-in worker (a test's scripted ``RunnerHandle``): nothing to read,
    nothing can be written."""

    async def read_exactly(self, size: int) -> bytes:
        raise EOFError

    async def write(self, data: bytes) -> None:
        raise OSError("stand-in worker has no channel")

    def close(self) -> None:
        pass
