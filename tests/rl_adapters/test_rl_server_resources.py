"""The reward server on the local backend under bubblewrap, with real sandbox jobs: per-item
sandbox resources as histograms per verifier and runtime (issue 13 item 5), and NeMo-Gym's
``POST /verify`` driving a scripted agent's workspace rollouts to a pass, to a partial score and
to an abstain when the sandbox dies (issue 15).

The NeMo-Gym agent's final state travels as the response text (a JSON file map of the files it
wrote); the server applies it to the task's starting tree in a fresh sandbox and runs the hidden
tests (the offline re-verification of ``code.workspace``). The module's one server (retries=0:
a killed sandbox is an abstain at the first attempt) serves both.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rl_helpers import LiveServer
from verifiers.rl_adapters.server import ServerSettings

from verifiers import EngineSettings
from verifiers.data import iter_jsonl

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.bwrap


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    settings = ServerSettings(
        engine=EngineSettings(concurrency=2, sandbox="local", workers=1, timeout_s=60, retries=0),
        verifier="answer.numeric",
    )
    with LiveServer(settings) as srv:
        yield srv


def test_metrics_have_sandbox_resource_histograms(server: LiveServer) -> None:
    line = (REPO / "datasets/examples/code.jsonl").read_text().splitlines()[0]
    item = json.loads(line)
    with httpx.Client(base_url=server.url, timeout=120) as client:
        reply = client.post("/v1/score", json={"trajectories": [item]})
        assert reply.status_code == 200, reply.text
        [result] = reply.json()["results"]
        assert result["status"] == "pass" and result["details"]["resources"]["jobs"] >= 1
        text = client.get("/metrics").text
    labels = 'runtime="python",verifier="code.tests"'
    for name in ("wall_seconds", "cpu_seconds", "peak_memory_mb"):
        assert f"verifiers_sandbox_{name}_count{{{labels}}} 1.0" in text, name


def test_metrics_count_recycled_runners_by_runtime_and_reason() -> None:
    """Runners the pool recycles show on ``/metrics`` by runtime and reason, once each
    (scrapes export the growth of the pool's tally, never the total again): a job that
    times out taints its runner (``tainted``); a runner past ``jobs_per_worker`` sessions is
    ``used_up``. Real bubblewrap runners of the server's own engine, in the app's loop."""
    import asyncio

    from verifiers.rl_adapters.server import create_app

    app = create_app(ServerSettings(engine=EngineSettings(sandbox="local", workers=1, cache=False)))
    prefix = "verifiers_sandbox_recycled_total{"

    def recycled(text: str) -> dict[str, float]:
        rows = [row for row in text.splitlines() if row.startswith(prefix)]
        return {row.rsplit(" ", 1)[0]: float(row.rsplit(" ", 1)[1]) for row in rows}

    async def main() -> list[dict[str, float]]:
        scrapes: list[dict[str, float]] = []
        async with app.router.lifespan_context(app):
            engine = app.state.verifiers["engine"]
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                async with engine._sandboxes.session("python", timeout_s=1) as box:
                    assert (await box.exec(["/bin/sleep", "30"])).timed_out
                scrapes.append(recycled((await client.get("/metrics")).text))
                scrapes.append(recycled((await client.get("/metrics")).text))
                pool = engine._sandboxes._provider._pool
                pool._settings = pool._settings.model_copy(update={"jobs_per_worker": 1})
                async with engine._sandboxes.session("python") as box:
                    assert (await box.exec(["/bin/true"])).ok
                scrapes.append(recycled((await client.get("/metrics")).text))
        return scrapes

    first, second, third = asyncio.run(main())
    tainted = prefix + 'reason="tainted",runtime="python"}'
    used_up = prefix + 'reason="used_up",runtime="python"}'
    assert first == second == {tainted: 1.0}, first
    assert third == {tainted: 1.0, used_up: 1.0}, third


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
