"""veRL 0.9 tools: called exactly as veRL's ToolAgentLoop calls a BaseTool (create with the
row's create_kwargs, execute with agent_data, release, all per call), state kept per request:
a workspace task to a pass, to a partial score, and to an abstain on a dead sandbox."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from types import SimpleNamespace
from typing import Any

import pytest
from episode_helpers import TASKS, row

from verifiers import EngineSettings

pytestmark = [pytest.mark.bwrap, pytest.mark.rl]


def test_tools_share_one_episode_per_request() -> None:
    from verifiers.rl_adapters.verl_env import (
        WorkspaceTool,
        _Requests,
        episode_result,
        finish_request,
    )

    WorkspaceTool.engine_settings = EngineSettings(sandbox="local")
    tools = {
        a: WorkspaceTool({"type": "native", "action": a})
        for a in ("run_command", "write_file", "list_files", "submit")
    }
    assert tools["write_file"].get_openai_tool_schema().function.parameters.required == [
        "path",
        "content",
    ]

    def kwargs(task_id: str) -> dict[str, Any]:
        return {
            "create_kwargs": {
                "task": json.dumps(row(task_id)["task"]),
                "episode": {"allow_shell": True},
            }
        }

    async def call(name: str, request: str, task_id: str, **args: Any) -> tuple[str, float]:
        tool = tools[name]
        instance, _ = await tool.create(create_kwargs=kwargs(task_id)["create_kwargs"])
        try:
            response, reward, _ = await tool.execute(
                instance, args, agent_data=SimpleNamespace(request_id=request)
            )
        finally:
            await tool.release(instance)
        return response.text or "", reward

    async def main() -> dict[str, Any]:
        calc_ok = TASKS["bugfix-calc"]["solution"]["calc.py"]
        partial = TASKS["config-parser"]["solution"]["conf.py"].replace("value.strip()", "value")
        assert "calc.py" in (await call("list_files", "r-pass", "bugfix-calc"))[0]
        await call("write_file", "r-pass", "bugfix-calc", path="calc.py", content=calc_ok)
        out, _ = await call(
            "run_command",
            "r-pass",
            "bugfix-calc",
            command="python3 -c 'import calc; print(calc.add(1, 1))'",
        )
        assert "2" in out
        text, reward = await call("submit", "r-pass", "bugfix-calc")
        assert reward == 1.0 and "Score 1.000" in text
        await call("write_file", "r-partial", "config-parser", path="conf.py", content=partial)
        partial_result = await finish_request("r-partial")  # never submitted: final tree judged
        await call("write_file", "r-dead", "bugfix-calc", path="calc.py", content=calc_ok)
        episode = _Requests.episodes["r-dead"][0]
        os.killpg(episode._sandbox._worker.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        await asyncio.sleep(0.2)
        dead_result = await finish_request("r-dead")
        results = {"pass": episode_result("r-pass"), "partial": partial_result, "dead": dead_result}
        for engine in list(_Requests.engines.values()):
            await engine.aclose()
        _Requests.engines.clear()
        return results

    results = asyncio.run(main())
    assert results["pass"] is not None and results["pass"].reward == 1.0
    assert results["partial"] is not None and results["partial"].reward == pytest.approx(2 / 3)
    dead = results["dead"]
    assert dead is not None and dead.status == "error" and dead.reward is None
    WorkspaceTool.engine_settings = None
