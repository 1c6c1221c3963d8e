"""TRL ``environment_factory``: the class called exactly as TRL 1.16 calls it (schemas from
transformers' ``get_json_schema``, ``reset(**row)``, tools by name, ``get_reward()``), driving a
workspace task to a pass, to a partial score and to an abstain on a dead sandbox; then a real
``GRPOTrainer`` CPU run (tiny model) that completes steps and logs the episode reward."""

from __future__ import annotations

import inspect
import json
import os
import signal
from typing import Any

import pytest
import tiny_trl
from episode_helpers import TASKS, row
from verifiers.rl_adapters.trl_env import VerifiersEnv

from verifiers import EngineSettings

pytestmark = pytest.mark.bwrap


def _trl_row(task_id: str) -> dict[str, Any]:
    r = row(task_id)
    return {
        "prompt": r["prompt"],
        "task": json.dumps(r["task"]),
        "episode": json.dumps({"allow_shell": True}),
    }


@pytest.fixture(scope="module", autouse=True)
def _local_engine() -> Any:
    VerifiersEnv.engine_settings = EngineSettings(sandbox="local")
    yield
    VerifiersEnv.engine_settings = None


def _tools(env: VerifiersEnv) -> dict[str, Any]:
    """The tools TRL would expose: public functions of the class but reset/get_reward."""
    from transformers.utils import get_json_schema

    tools = {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
    for tool in tools.values():
        get_json_schema(tool)  # what TRL renders into the prompt; raises on a bad docstring
    return tools


def test_tool_schemas_are_what_trl_renders() -> None:
    from transformers.utils import get_json_schema

    env = VerifiersEnv()
    assert set(_tools(env)) == {"list_files", "read_file", "run_command", "submit", "write_file"}
    schema = get_json_schema(env.write_file)
    assert schema["function"]["parameters"]["required"] == ["path", "content"]
    assert "workspace" in schema["function"]["description"]


def test_scripted_agent_pass_partial_and_abstain() -> None:
    env = VerifiersEnv()  # zero-arg, as TRL builds it; reused across rollouts like TRL's pool
    # pass: fix the bug with the tools, check it, submit
    observation = env.reset(**_trl_row("bugfix-calc"))
    assert observation is not None and "calc.py" in observation
    tools = _tools(env)
    assert "return a - b" in tools["read_file"](path="calc.py")
    assert (
        tools["write_file"](path="calc.py", content=TASKS["bugfix-calc"]["solution"]["calc.py"])
        == "ok"
    )
    assert "exit code: 0" in tools["run_command"](
        command="python3 -c 'import calc; print(calc.add(2, 3))'"
    )
    assert "Score 1.000" in tools["submit"]()
    assert env.get_reward() == 1.0
    # partial: 2 of 3 config-parser tests
    env.reset(**_trl_row("config-parser"))
    partial = TASKS["config-parser"]["solution"]["conf.py"].replace("value.strip()", "value")
    _tools(env)["write_file"](path="conf.py", content=partial)
    assert env.get_reward() == pytest.approx(2 / 3)  # unsubmitted: the final tree is judged
    # abstain: the sandbox dies under the episode
    env.reset(**_trl_row("bugfix-calc"))
    _tools(env)["write_file"](path="calc.py", content=TASKS["bugfix-calc"]["solution"]["calc.py"])
    worker = env._episode.episode._sandbox._worker  # type: ignore[union-attr]
    os.killpg(worker.process.pid, signal.SIGKILL)
    assert env.get_reward() is None
    assert env.final_result.error is not None and env.final_result.error.kind == "infra"
    # refusals are text for the model, not exceptions
    env.reset(**_trl_row("bugfix-calc"))
    assert "leaves the work dir" in _tools(env)["write_file"](path="../x.py", content="x")
    env.get_reward()


def test_bad_row_abstains() -> None:
    env = VerifiersEnv()
    assert env.reset(prompt="p") is None
    assert env.get_reward() is None


@pytest.mark.rl
@pytest.mark.slow
def test_grpo_trainer_runs_with_the_environment_factory(tmp_path: Any) -> None:
    tiny_trl.offline()
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from datasets import Dataset

    torch.manual_seed(0)
    model = tiny_trl.model()
    rows = [_trl_row("cli-greet") for _ in range(2)]
    dataset = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": r["prompt"]}] for r in rows],
            "task": [r["task"] for r in rows],
            "episode": [r["episode"] for r in rows],
        }
    )
    args = GRPOConfig(
        **tiny_trl.trainer_args(
            tmp_path,
            per_device_train_batch_size=4,
            num_generations=2,
            max_steps=2,
            max_tool_calling_iterations=1,
        )
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tiny_trl.tokenizer(),
        args=args,
        train_dataset=dataset,
        environment_factory=VerifiersEnv,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "rewards/VerifiersEnv/mean" in h]
    assert len(logged) == 2
    # the starting tree of cli-greet passes none of its io checks: a judged 0, not an abstain
    assert all(h["rewards/VerifiersEnv/mean"] == 0.0 for h in logged)
