"""OpenEnv's reset/step/state, served by ``verifiers serve`` (uvicorn in a thread, the real
server app): a scripted agent drives a workspace task to a pass over plain HTTP, to a partial
score, and to an abstain (``reward: null``, ``done``, status ``error``) when the session's
sandbox is killed mid-episode; and OpenEnv's own client (``openenv-core``'s
``GenericEnvClient``, over its WebSocket) runs a whole episode to a pass."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from episode_helpers import TASKS, row, serve_in_thread

pytestmark = pytest.mark.bwrap


def _serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, str]:
    from verifiers.rl_adapters.server import ServerSettings, create_app

    from verifiers import EngineSettings

    rows = [
        {**row("bugfix-calc"), "episode": {"allow_shell": True}},
        row("config-parser"),
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("VERIFIERS_OPENENV_TASKS", str(tasks))
    app = create_app(ServerSettings(engine=EngineSettings(sandbox="local")))
    server, thread, port = serve_in_thread(app)
    return server, thread, f"http://127.0.0.1:{port}/openenv"


def _tool(session: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"session_id": session, "action": {"tool": tool, "arguments": arguments}}


def test_openenv_http_and_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, thread, url = _serve(tmp_path, monkeypatch)
    calc_ok = TASKS["bugfix-calc"]["solution"]["calc.py"]
    partial = TASKS["config-parser"]["solution"]["conf.py"].replace("value.strip()", "value")
    out: dict[str, Any] = {}
    try:
        with httpx.Client(base_url=url, timeout=120) as http:
            # pass, over plain HTTP
            first = http.post("/reset", json={"task_id": "bugfix-calc"}).json()
            sid = first["observation"]["session_id"]
            assert "calc.py" in first["observation"]["text"] and first["done"] is False
            wrote = http.post(
                "/step", json=_tool(sid, "write_file", path="calc.py", content=calc_ok)
            )
            assert wrote.json()["observation"]["text"] == "ok"
            ran = http.post(
                "/step",
                json=_tool(
                    sid, "run_command", command="python3 -c 'import calc; print(calc.add(2, 2))'"
                ),
            ).json()
            assert "exit code: 0" in ran["observation"]["text"] and ran["reward"] is None
            # a model's bad call is text, in the shared dispatch's words
            bad = http.post("/step", json=_tool(sid, "read_file", path=3)).json()
            assert (
                bad["observation"]["text"] == "read_file: argument 'path' must be a string, got int"
            )
            out["pass"] = http.post("/step", json=_tool(sid, "submit")).json()
            out["pass_state"] = http.get("/state", params={"session_id": sid}).json()
            # partial: the episode stays open (attempts left)
            sid2 = http.post("/reset", json={"seed": 1}).json()["observation"]["session_id"]
            http.post("/step", json=_tool(sid2, "write_file", path="conf.py", content=partial))
            # a task without a shell still runs a command line: split into words, no shell
            argv = http.post(
                "/step", json=_tool(sid2, "run_command", command="python3 -c 'print(6 * 7)' | x")
            )
            out["argv"] = argv.json()["observation"]["text"]
            out["partial"] = http.post("/step", json=_tool(sid2, "submit")).json()
            # abstain: the session's sandbox dies mid-episode
            sid3 = http.post("/reset", json={"task_id": "bugfix-calc"}).json()["observation"][
                "session_id"
            ]
            http.post("/step", json=_tool(sid3, "write_file", path="calc.py", content=calc_ok))
            sessions = server.config.app.state.verifiers["openenv"]
            os.killpg(sessions.sessions[sid3].episode._sandbox._worker.process.pid, signal.SIGKILL)
            time.sleep(0.2)
            out["dead"] = http.post("/step", json=_tool(sid3, "submit")).json()
            # bad requests name the field
            out["unknown_key"] = http.post("/reset", json={"tasks_id": "x"})
            out["no_session"] = http.post("/step", json=_tool("nope", "list_files"))

        async def client_episode() -> list[Any]:
            from openenv.core.generic_client import GenericEnvClient

            async with GenericEnvClient(base_url=url) as env:
                reset = await env.reset(task_id="bugfix-calc")
                steps = [reset]
                for action in (
                    {"tool": "write_file", "arguments": {"path": "calc.py", "content": calc_ok}},
                    {"tool": "submit", "arguments": {}},
                ):
                    steps.append(await env.step(action))
                steps.append(await env.state())
                return steps

        out["client"] = asyncio.run(client_episode())
    finally:
        server.should_exit = True
        thread.join(30)
    assert out["pass"]["reward"] == 1.0 and out["pass"]["done"] is True
    assert out["pass_state"]["result"]["status"] == "pass"
    assert out["pass_state"]["step_count"] == 4
    assert out["partial"]["reward"] == pytest.approx(2 / 3) and out["partial"]["done"] is False
    assert out["argv"].startswith("exit code: 0\nstdout:\n42\n"), out["argv"]
    dead = out["dead"]
    assert dead["reward"] is None and dead["done"] is True
    assert dead["observation"]["status"] == "error"
    assert out["unknown_key"].status_code == 422 and "tasks_id" in out["unknown_key"].text
    assert out["no_session"].status_code == 422 and "call reset first" in out["no_session"].text
    reset, wrote, submitted, state = out["client"]
    assert "calc.py" in reset.observation["text"]
    assert wrote.observation["text"] == "ok"
    assert submitted.reward == 1.0 and submitted.done
    assert state["result"]["status"] == "pass"
