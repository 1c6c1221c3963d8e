"""The Open Reward Standard routes, driven by the real ``openreward`` client against the real
server (uvicorn in a thread): a workspace task to a pass, to a partial, and to an abstain
(``reward: null``) on a dead sandbox."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest
from episode_helpers import TASKS, row, serve_in_thread

from verifiers import EngineSettings

pytestmark = pytest.mark.bwrap


def test_ors_client_pass_partial_abstain() -> None:
    from verifiers.rl_adapters.ors import WorkspaceEnvironment, build_app

    rows = [
        {**row("bugfix-calc"), "episode": {"allow_shell": True}},
        row("config-parser"),
        row("bugfix-calc"),
    ]
    app = build_app({"train": rows}, engine=EngineSettings(sandbox="local"))
    server, thread, port = serve_in_thread(app)
    url = f"http://127.0.0.1:{port}/"

    async def main() -> dict[str, Any]:
        from openreward import AsyncOpenReward

        client = AsyncOpenReward(base_url=url)
        env = client.environments.get("workspace", base_url=url)
        assert "train" in str(await env.list_splits())
        tasks = await env.list_tasks("train")
        assert len(tasks) == 3
        out: dict[str, Any] = {}
        async with env.session(task=tasks[0]) as session:
            names = {t.name for t in await session.list_tools()}
            assert {"run_command", "write_file", "read_file", "list_files", "submit"} <= names
            prompt = await session.get_prompt()
            assert "calc.py" in prompt[0].text
            await session.call_tool(
                "write_file",
                {"path": "calc.py", "content": TASKS["bugfix-calc"]["solution"]["calc.py"]},
            )
            ran = await session.call_tool(
                "run_command", {"command": "python3 -c 'import calc; print(calc.add(2, 2))'"}
            )
            assert "4" in ran.blocks[0].text
            out["pass"] = await session.call_tool("submit", {})
        async with env.session(task=tasks[1]) as session:
            partial = TASKS["config-parser"]["solution"]["conf.py"].replace(
                "value.strip()", "value"
            )
            await session.call_tool("write_file", {"path": "conf.py", "content": partial})
            out["partial"] = await session.call_tool("submit", {})
        async with env.session(task=tasks[2]) as session:
            await session.call_tool("list_files", {})
            for klass in [WorkspaceEnvironment, *WorkspaceEnvironment.__subclasses__()]:
                for engine in klass._engines.values():
                    provider = engine._episode_sandboxes._provider  # type: ignore[attr-defined]
                    for slot in provider._pool._slots.values():
                        for worker in slot.busy:
                            os.killpg(worker.process.pid, signal.SIGKILL)
            await asyncio.sleep(0.2)
            out["dead"] = await session.call_tool("submit", {})
        import httpx

        async with httpx.AsyncClient() as http:  # the server's own routes still answer
            out["health"] = (await http.get(url + "health")).status_code
        await client.environments.aclose()
        return out

    try:
        out = asyncio.run(main())
    finally:
        server.should_exit = True
        thread.join(10)
    assert out["pass"].reward == 1.0 and out["pass"].finished
    assert out["partial"].reward == pytest.approx(2 / 3) and not out["partial"].finished
    assert out["dead"].reward is None and out["dead"].finished
    assert out["health"] == 200
