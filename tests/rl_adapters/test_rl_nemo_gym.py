"""NeMo-Gym's ``POST /verify`` on a live ``verifiers serve`` (local sandbox): a scripted agent's
workspace rollouts to a pass, to a partial score, and to an abstain when the sandbox dies.

The agent's final state travels as the response text (a JSON file map of the files it wrote),
as a NeMo-Gym agent would report it; the server applies it to the task's starting tree in a
fresh sandbox and runs the hidden tests (the offline re-verification of ``code.workspace``).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from rl_helpers import LiveServer
from verifiers.rl_adapters.server import ServerSettings

from verifiers import EngineSettings
from verifiers.data import iter_jsonl

pytestmark = pytest.mark.bwrap

TASKS = {t["id"]: t for t in iter_jsonl("workspace", "tasks.jsonl")}


def _body(task_id: str, files: dict[str, str]) -> dict[str, Any]:
    task = TASKS[task_id]
    return {
        "responses_create_params": {"input": [{"role": "user", "content": task["prompt"]}]},
        "response": {
            "id": f"resp-{task_id}",
            "object": "response",
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": json.dumps(files)}],
                }
            ],
        },
        "task": task["task"],
    }


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    # retries=0: the killed sandbox is an abstain at the first attempt (no backoff to wait out)
    engine = EngineSettings(sandbox="local", concurrency=2, workers=1, retries=0)
    settings = ServerSettings(engine=engine)
    with LiveServer(settings) as srv:
        yield srv


def _kill_busy_workers(server: LiveServer, stop: threading.Event) -> None:
    """SIGKILL every busy sandbox runner of the server's engine until ``stop``."""
    while not stop.is_set():
        engine = server.server.config.app.state.verifiers["engine"]  # type: ignore[attr-defined]
        provider = getattr(engine._sandboxes, "_provider", None)
        pool = getattr(provider, "_pool", None)
        for slot in list(getattr(pool, "_slots", {}).values()):
            for worker in list(slot.busy):
                try:
                    os.killpg(worker.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.005)


def test_workspace_rollouts_pass_partial_and_abstain_on_a_dead_sandbox(
    server: LiveServer,
) -> None:
    solution = TASKS["bugfix-calc"]["solution"]
    partial = TASKS["config-parser"]["solution"]["conf.py"].replace("value.strip()", "value")
    with httpx.Client(base_url=server.url, timeout=300) as client:
        passed = client.post("/verify", json=_body("bugfix-calc", solution)).json()
        part = client.post("/verify", json=_body("config-parser", {"conf.py": partial})).json()
        stop = threading.Event()
        killer = threading.Thread(target=_kill_busy_workers, args=(server, stop), daemon=True)
        killer.start()
        try:
            dead = client.post("/verify", json=_body("bugfix-calc", solution)).json()
        finally:
            stop.set()
            killer.join(10)
    assert (passed["reward"], passed["mask_sample"]) == (1.0, False), passed["verifiers"]
    assert part["reward"] == pytest.approx(2 / 3) and part["mask_sample"] is False
    assert part["verifiers"]["status"] == "fail"
    # the hidden tests' source never reaches the reply's feedback
    assert "def test" not in part["verifiers"]["feedback"]
    assert dead["reward"] is None and dead["mask_sample"] is True, dead["verifiers"]
    assert dead["failure_kind"] == "provider_unavailable", dead
