"""Shared pieces of the episode tests (imported as ``episode_helpers``): the workspace corpus and one engine per test run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from verifiers import Engine, EngineSettings
from verifiers.data import iter_jsonl

T = TypeVar("T")

TASKS = {t["id"]: t for t in iter_jsonl("workspace", "tasks.jsonl")}
HACKS = list(iter_jsonl("workspace", "hacks.jsonl"))


def row(task_id: str, **extra: Any) -> dict[str, Any]:
    """A task row of the corpus as an episode or trajectory item (without its solution)."""
    task = {k: v for k, v in TASKS[task_id].items() if k != "solution"}
    return {**task, **extra}


def with_engine(body: Callable[[Engine], Awaitable[T]], **settings: Any) -> T:
    """Run ``body(engine)`` on a fresh engine (local sandbox unless ``sandbox=`` says
    otherwise) in its own event loop."""
    settings.setdefault("sandbox", "local")

    async def main() -> T:
        async with Engine(EngineSettings(**settings)) as engine:
            return await body(engine)

    return asyncio.run(main())
