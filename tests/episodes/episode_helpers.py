"""Shared pieces of the episode tests (imported as ``episode_helpers``): the workspace corpus and one engine per test run."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from verifiers import Engine, EngineSettings
from verifiers.data import iter_jsonl

T = TypeVar("T")

TASKS = {t["id"]: t for t in iter_jsonl("workspace", "tasks.jsonl")}
HACKS = list(iter_jsonl("workspace", "hacks.jsonl"))
LIMITS = list(iter_jsonl("workspace", "limits.jsonl"))
"""What the hidden tests' proxies into the project cannot carry: each row's expected verdict."""


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


def serve_in_thread(app: Any) -> tuple[Any, threading.Thread, int]:
    """``app`` under a real uvicorn server on a free loopback port, in a daemon thread; stop it
    with ``server.should_exit = True`` and ``thread.join()``."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, thread, port
