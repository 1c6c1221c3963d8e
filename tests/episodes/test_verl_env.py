"""veRL 0.9 tools: called exactly as veRL's ToolAgentLoop calls a BaseTool (create with the
row's create_kwargs, execute with agent_data, release, all per call), state kept per request:
a workspace task to a pass, to a partial score, and to an abstain on a dead sandbox; then
the reward manager rewards each request's episode result carried in the rollout's
extra_fields (abstain -> zero advantage, unfinished -> 0)."""

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


def test_manager_rewards_each_requests_episode_result(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Tools share one episode per request (a fresh instance per call, as veRL's
    ToolAgentLoop does). They run in veRL's agent loop worker, the manager in a reward worker: the episode's
    final result travels in the rollout's ``extra_fields`` (veRL's ``AgentData``), and the
    manager rewards it instead of the response text (which alone would score 0 here): a pass,
    a partial submit, a lost sandbox (abstain: its group's judged mean, never 0) and a rollout
    that never submitted (the model's fail, 0). Both of veRL's routes are checked: the
    streaming one (``tool_extra_fields``) and the batch one (``extra_fields`` as columns)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rl_adapters"))
    from transformers import AutoTokenizer
    from verifiers.rl_adapters.verl_env import (
        WorkspaceTool,
        _Requests,
        episode_result,
        finish_request,
    )
    from verifiers.rl_adapters.verl_manager import VerifiersRewardManager
    from verl_helpers import OUR_MANAGER, save_tokenizer, verl_batch, verl_config

    WorkspaceTool.engine_settings = EngineSettings(sandbox="local")
    tools = {
        a: WorkspaceTool({"type": "native", "action": a})
        for a in ("run_command", "write_file", "list_files", "submit")
    }
    assert tools["write_file"].get_openai_tool_schema().function.parameters.required == [
        "path",
        "content",
    ]
    # veRL's AgentData as the tools see it (its module needs hydra, not installed here):
    # request_id, and extra_fields, "for tool session data", starting empty.
    agents = {
        rid: SimpleNamespace(request_id=rid, extra_fields={})
        for rid in ("r-pass", "r-partial", "r-dead", "r-quit")
    }
    tasks = {"r-pass": "bugfix-calc", "r-partial": "config-parser", "r-dead": "bugfix-calc"}
    tasks["r-quit"] = "config-parser"

    async def call(name: str, request: str, **args: Any) -> tuple[str, float]:
        tool = tools[name]
        create = {"task": json.dumps(row(tasks[request])["task"]), "episode": {"allow_shell": True}}
        instance, _ = await tool.create(create_kwargs=create)
        try:
            response, reward, _ = await tool.execute(instance, args, agent_data=agents[request])
        finally:
            await tool.release(instance)
        return response.text or "", reward

    async def drive() -> Any:
        calc_ok = TASKS["bugfix-calc"]["solution"]["calc.py"]
        partial = TASKS["config-parser"]["solution"]["conf.py"].replace("value.strip()", "value")
        assert "calc.py" in (await call("list_files", "r-pass"))[0]
        await call("write_file", "r-pass", path="calc.py", content=calc_ok)
        out, _ = await call(
            "run_command", "r-pass", command="python3 -c 'import calc; print(calc.add(1, 1))'"
        )
        assert "2" in out
        text, reward = await call("submit", "r-pass")
        assert reward == 1.0 and "Score 1.000" in text
        assert (passed := episode_result("r-pass")) is not None and passed.reward == 1.0
        await call("write_file", "r-partial", path="conf.py", content=partial)
        await call("submit", "r-partial")  # 2/3, and the episode stays open for more tries
        await call("write_file", "r-dead", path="calc.py", content=calc_ok)
        episode = _Requests.episodes["r-dead"][0]
        os.killpg(episode._sandbox._worker.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        await asyncio.sleep(0.2)
        await call("submit", "r-dead")  # the tree cannot be read back: lost, an abstain
        await call("write_file", "r-quit", path="conf.py", content=partial)  # never submitted
        assert "verifiers_result" not in agents["r-quit"].extra_fields
        # In the tools' own process, closing it judges the final tree (2 of 3 tests); the
        # reward manager cannot reach it, and scores the unfinished rollout 0 (below).
        quit_tree = await finish_request("r-quit")
        for engine in list(_Requests.engines.values()):
            await engine.aclose()
        _Requests.engines.clear()
        _Requests.episodes.clear()
        return quit_tree

    try:
        quit_tree = asyncio.run(drive())
    finally:
        WorkspaceTool.engine_settings = None
    assert quit_tree is not None and quit_tree.reward == pytest.approx(2 / 3)
    fields = [agents[r].extra_fields for r in ("r-pass", "r-partial", "r-dead", "r-quit")]
    assert "verifiers_result" not in fields[3] and fields[3]["verifiers_request"] == "r-quit"

    tok = save_tokenizer(tmp_path_factory.mktemp("tok"))
    config = verl_config(tok, OUR_MANAGER, reward_kwargs={"sandbox": "local"})
    texts = ["I fixed it."] * 4  # scored as text, a workspace task gets no credit for this
    ws_tasks = [row(tasks[r])["task"] for r in ("r-pass", "r-partial", "r-dead", "r-quit")]
    streaming = verl_batch(tok, texts, ws_tasks, ["g"] * 4, tool_extra_fields=fields)
    columns = verl_batch(
        tok,
        texts,
        ws_tasks,
        ["h"] * 4,
        verifiers_result=[f.get("verifiers_result") for f in fields],
        verifiers_request=[f.get("verifiers_request") for f in fields],
    )

    async def rewards() -> list[list[dict[str, Any]]]:
        # Built inside a running loop: outside one, veRL's manager makes a loop nobody closes.
        manager = VerifiersRewardManager(config, AutoTokenizer.from_pretrained(tok), None)
        return [
            list(await asyncio.gather(*(manager.run_single(b[i : i + 1]) for i in range(4))))
            for b in (streaming, columns)
        ]

    for outs in asyncio.run(rewards()):
        scores = [o["reward_score"] for o in outs]
        assert scores[0] == 1.0 and scores[1] == pytest.approx(2 / 3) and scores[3] == 0.0
        assert scores[2] == pytest.approx((1.0 + 2 / 3 + 0.0) / 3)  # the judged mean
        valid = [o["reward_extra_info"]["verifiers_valid"] for o in outs]
        assert valid == [1.0, 1.0, 0.0, 1.0]
        assert outs[2]["reward_extra_info"]["verifiers_error_infra"] == 1.0


def test_tool_rollout_hacks_reach_the_manager_as_zero(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """datasets/verl/tool_rollouts.jsonl: rollouts that drive the tools the way veRL does,
    each aiming for an abstain (kill the sandbox, never submit, exhaust a budget, unreadable
    tree, a forged result in the text) or for credit. All run concurrently on one engine, then
    through the reward manager in one batch: every one is the model's 0, valid (never an
    abstain)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rl_adapters"))
    from transformers import AutoTokenizer
    from verifiers.rl_adapters.verl_env import WorkspaceTool, _Requests
    from verifiers.rl_adapters.verl_manager import VerifiersRewardManager
    from verl_helpers import OUR_MANAGER, save_tokenizer, verl_batch, verl_config

    from verifiers.data import iter_jsonl

    hacks = list(iter_jsonl("verl", "tool_rollouts.jsonl"))
    assert len(hacks) >= 10
    WorkspaceTool.engine_settings = EngineSettings(sandbox="local")
    tools: dict[str, Any] = {}
    agents = {h["id"]: SimpleNamespace(request_id=h["id"], extra_fields={}) for h in hacks}

    async def rollout(hack: dict[str, Any]) -> None:
        create = {"task": json.dumps(row(hack["task_id"])["task"]), "episode": hack.get("episode")}
        for call in hack["calls"]:
            name = call["tool"]
            tool = tools.setdefault(name, WorkspaceTool({"type": "native", "action": name}))
            instance, _ = await tool.create(create_kwargs=create)
            try:
                await tool.execute(instance, call["args"], agent_data=agents[hack["id"]])
            finally:
                await tool.release(instance)

    async def drive() -> None:
        try:
            await asyncio.gather(*(rollout(h) for h in hacks))
        finally:
            for engine in list(_Requests.engines.values()):
                await engine.aclose()
            _Requests.engines.clear()
            _Requests.episodes.clear()

    try:
        asyncio.run(drive())
    finally:
        WorkspaceTool.engine_settings = None
    tok = save_tokenizer(tmp_path_factory.mktemp("tok"))
    config = verl_config(tok, OUR_MANAGER, n=len(hacks), reward_kwargs={"sandbox": "local"})
    batch = verl_batch(
        tok,
        [h.get("response", "Done.") for h in hacks],
        [row(h["task_id"])["task"] for h in hacks],
        ["hacks"] * len(hacks),
        tool_extra_fields=[agents[h["id"]].extra_fields for h in hacks],
    )

    async def rewards() -> list[dict[str, Any]]:
        # Built inside a running loop: outside one, veRL's manager makes a loop nobody closes.
        manager = VerifiersRewardManager(config, AutoTokenizer.from_pretrained(tok), None)
        return list(
            await asyncio.gather(*(manager.run_single(batch[i : i + 1]) for i in range(len(hacks))))
        )

    outs = asyncio.run(rewards())
    got = {
        h["id"]: (o["reward_score"], o["reward_extra_info"]["verifiers_valid"])
        for h, o in zip(hacks, outs, strict=True)
    }
    assert got == {h["id"]: (0.0, 1.0) for h in hacks}
