"""The episode's tools are one table (``rl_adapters/_tools.py``): every trainer's API renders
the same schemas from it and words a bad call the same; and a bad task item is worded the same
from a file, from Python and from an episode (the engine's one validation path). No sandbox
starts here: argument checks and item validation come before any."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from episode_helpers import row
from verifiers.rl_adapters import _tools

from verifiers import BadInput, Engine, EngineSettings, SyncEpisode
from verifiers.io import iter_records

BAD_CALLS: list[tuple[str, Any, str]] = [
    ("read_file", {"path": 3}, "read_file: argument 'path' must be a string, got int"),
    ("write_file", {"path": "a.py"}, "write_file: missing argument 'content' (a string)"),
    (
        "run_command",
        {"command": "ls", "cwd": "/"},
        "run_command: unknown argument 'cwd'; its arguments: command",
    ),
    ("list_files", ["x"], "list_files: the arguments must be an object, got list"),
    (
        "rm_rf",
        {},
        "unknown tool 'rm_rf'; the tools are: run_command, write_file, read_file, list_files, submit",
    ),
    ("submit", {"answer": {"x": 1}}, "submit: argument 'answer' must be a string, got dict"),
]


def test_every_api_renders_the_tables_schema() -> None:
    from transformers.utils import get_json_schema
    from verifiers.rl_adapters.ors import WorkspaceEnvironment
    from verifiers.rl_adapters.trl_env import VerifiersEnv
    from verifiers.rl_adapters.verl_env import WorkspaceTool

    for spec in _tools.TOOLS:
        wanted = _tools.json_schema(spec.name)
        trl = get_json_schema(getattr(VerifiersEnv, spec.name))["function"]
        assert trl["description"] == spec.description
        assert set(trl["parameters"].get("properties", {})) == set(wanted["properties"])
        assert trl["parameters"].get("required", []) == wanted["required"]
        verl = WorkspaceTool({"type": "native", "action": spec.name}).get_openai_tool_schema()
        assert verl.function.description == spec.description
        assert list(verl.function.parameters.properties) == list(wanted["properties"])
        assert verl.function.parameters.required == wanted["required"]
        ors = _tools.args_model(spec.name).model_json_schema()
        assert list(ors.get("properties", {})) == list(wanted["properties"])
        assert ors.get("required", []) == wanted["required"]
    names = {t.name for t in WorkspaceEnvironment.list_tools().tools}
    assert names == {spec.name for spec in _tools.TOOLS}


def test_a_bad_call_reads_the_same_through_every_api() -> None:
    """TRL's method, veRL's execute, OpenRLHF's <tool_call>, ORS's call, OpenEnv's step:
    one wording (the episode is made but never started: the check comes first)."""
    from types import SimpleNamespace

    from verifiers.rl_adapters.openrlhf_env import VerifiersAgent
    from verifiers.rl_adapters.ors import WorkspaceEnvironment
    from verifiers.rl_adapters.trl_env import VerifiersEnv
    from verifiers.rl_adapters.verl_env import WorkspaceTool, _Requests

    settings = EngineSettings(sandbox="local")
    trl = VerifiersEnv()
    trl._episode = SyncEpisode(row("bugfix-calc"), engine=settings)

    async def main() -> list[tuple[str, ...]]:
        async with Engine(settings) as engine:
            agent = VerifiersAgent()
            agent._episode = engine.episode(row("bugfix-calc"))
            ors = WorkspaceEnvironment({})
            ors.episode = engine.episode(row("bugfix-calc"))
            _Requests.episodes["r-bad"] = (engine.episode(row("bugfix-calc")), 0.0)
            seen = []
            for name, arguments, _ in BAD_CALLS:
                call = json.dumps({"name": name, "arguments": arguments})
                step = await agent.step({"action_text": f"<tool_call>{call}</tool_call>"})
                feedback = step["environment_feedback"]
                openrlhf = feedback.removeprefix(agent.feedback_prefix).removesuffix(
                    agent.feedback_suffix
                )
                via_ors = (await ors.call(name, arguments)).blocks[0].text
                direct = (await _tools.call_tool(ors.episode, name, arguments)).text
                verl = ""
                if name in _tools._BY_NAME:
                    tool = WorkspaceTool({"type": "native", "action": name})
                    agent_data = SimpleNamespace(request_id="r-bad", extra_fields={})
                    response, _, _ = await tool.execute("i", arguments, agent_data=agent_data)
                    verl = str(response.text)
                seen.append((openrlhf, via_ors, direct, verl))
            _Requests.episodes.pop("r-bad")
            return seen

    seen = asyncio.run(main())
    for (name, arguments, message), (openrlhf, via_ors, direct, verl) in zip(
        BAD_CALLS, seen, strict=True
    ):
        assert openrlhf == via_ors == direct == message
        assert verl in (message, "")
        if isinstance(arguments, dict) and name in _tools._BY_NAME:
            assert trl._call(name, **arguments) == message


BAD_ITEMS: list[tuple[str, dict[str, Any]]] = [
    ("unknown spec key", {"task": {"verifier": "code.workspace", "spec": {"filez": {}}}}),
    ("unknown verifier", {"task": {"verifier": "code.workspce", "spec": {}}}),
    ("no task", {"prompt": "p"}),
    ("prompt of the wrong type", {"prompt": 3, "task": {"verifier": "code.workspace"}}),
]


@pytest.mark.parametrize(("why", "item"), BAD_ITEMS, ids=[w for w, _ in BAD_ITEMS])
def test_one_bad_item_one_message_from_three_entry_points(
    why: str, item: dict[str, Any], tmp_path: Path
) -> None:
    line = {"id": "bad", "completion": "", **item}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")

    async def main() -> tuple[str, str, str]:
        async with Engine(EngineSettings(sandbox="local")) as engine:
            from_file = (await engine.score(iter_records(path)))[0]
            from_python = await engine.score_one(dict(line))
            with pytest.raises(BadInput) as raised:
                engine.episode(dict(line))
        assert from_file.error is not None and from_python.error is not None
        return from_file.error.message, from_python.error.message, str(raised.value)

    from_file, from_python, from_episode = asyncio.run(main())
    assert from_file == from_python == from_episode, why
