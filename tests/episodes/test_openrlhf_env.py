"""OpenRLHF ``AgentInstance``: driven by OpenRLHF's own ``MultiTurnAgentExecutor.execute``
with a scripted generator (fixed actions per turn) and a real tokenizer: a workspace task to a
pass, to a partial score, and to an abstain (the group's judged mean) on a dead sandbox."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from types import SimpleNamespace
from typing import Any

import pytest
from episode_helpers import TASKS, row
from verifiers.rl_adapters.openrlhf_env import VerifiersAgent, parse_tool_call

from verifiers import EngineSettings

pytestmark = [pytest.mark.bwrap, pytest.mark.rl]


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        ["tool call write file"] * 10,
        trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok)


class ScriptedEngine:
    """Stands in for vLLM: each rollout gets the next unassigned script for its prompt, and is
    recognised later by its first action in the context."""

    def __init__(self, tokenizer: Any, scripts: list[tuple[str, list[str]]]) -> None:
        self.tokenizer = tokenizer
        self.scripts = [(marker, list(actions), actions[0]) for marker, actions in scripts]
        self.assigned: set[int] = set()

    async def generate(
        self, tokens: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> Any:
        text = self.tokenizer.decode(tokens)
        mine = [
            i
            for i, (marker, _, first) in enumerate(self.scripts)
            if marker in text and first in text
        ]
        if not mine:
            mine = [
                i
                for i, (marker, _, _) in enumerate(self.scripts)
                if marker in text and i not in self.assigned
            ][:1]
            self.assigned.update(mine)
        action = self.scripts[mine[0]][1].pop(0)
        ids = self.tokenizer(text=action, add_special_tokens=False)["input_ids"]
        return SimpleNamespace(
            outputs=[SimpleNamespace(token_ids=ids, text=action, finish_reason="stop")]
        )


def _call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_parse_tool_call() -> None:
    assert parse_tool_call("x " + _call("list_files") + " y") == ("list_files", {})
    assert parse_tool_call("no call") is None
    assert parse_tool_call("<tool_call>{nope}</tool_call>")[0] == "invalid"  # type: ignore[index]


def test_multi_turn_executor_pass_partial_and_abstain() -> None:
    from openrlhf.utils.agent import MultiTurnAgentExecutor

    tokenizer = _tokenizer()
    calc_ok = TASKS["bugfix-calc"]["solution"]["calc.py"]
    partial = TASKS["config-parser"]["solution"]["conf.py"].replace("value.strip()", "value")
    good_conf = TASKS["config-parser"]["solution"]["conf.py"]
    scripts = [
        (
            "PASS-ME",
            [_call("write_file", path="calc.py", content=calc_ok), _call("submit"), "done"],
        ),
        ("PARTIAL-ME", [_call("write_file", path="conf.py", content=partial), "I am done."]),
        ("GROUP", [_call("write_file", path="conf.py", content=good_conf), "KILL", "done"]),
        ("GROUP", [_call("write_file", path="conf.py", content=partial), "done"]),
    ]
    labels = {
        "PASS-ME": json.dumps(row("bugfix-calc")["task"]),
        "PARTIAL-ME": json.dumps(row("config-parser")["task"]),
        "GROUP": json.dumps(row("config-parser")["task"]),
    }

    class Agent(VerifiersAgent):
        engine_settings = EngineSettings(sandbox="local")
        group_size = 1
        instances: list[VerifiersAgent] = []

        def __init__(self) -> None:
            super().__init__()
            Agent.instances.append(self)

        async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            if states["action_text"] == "KILL":  # the sandbox dies under the episode
                os.killpg(self._episode._sandbox._worker.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
                await asyncio.sleep(0.2)
                return self._reply(0.0, "ok", done=False)
            return await super().step(states, **kwargs)

    async def main() -> list[dict[str, Any]]:
        executor = MultiTurnAgentExecutor(Agent)
        engine = ScriptedEngine(tokenizer, scripts)
        params = SimpleNamespace(logprobs=None, max_tokens=4096)
        out = []
        for key in ("PASS-ME", "PARTIAL-ME"):
            out.append(
                await executor.execute(
                    f"task {key}", labels[key], params, 100_000, tokenizer, engine
                )
            )
        # the dead one and its judged group peer, concurrently: the abstain takes the peer's reward
        Agent.group_size = 2
        out += await asyncio.gather(
            *(
                executor.execute("task GROUP", labels["GROUP"], params, 100_000, tokenizer, engine)
                for _ in range(2)
            )
        )
        return out

    passed, partial_out, dead, peer = asyncio.run(main())
    assert passed["reward"] == 1.0 and passed["scores"].item() == 1.0
    assert partial_out["reward"] == pytest.approx(2 / 3)
    assert dead["extra_logs"]["verifiers_valid"].item() == 0.0
    assert peer["extra_logs"]["verifiers_valid"].item() == 1.0
    assert peer["reward"] == pytest.approx(2 / 3)
    assert dead["reward"] == pytest.approx(
        peer["reward"]
    )  # the group's judged mean: zero advantage
    assert set(dead["extra_logs"]) == set(passed["extra_logs"])
    states = [a.result.status for a in Agent.instances if a.result is not None]
    assert states.count("error") == 1
