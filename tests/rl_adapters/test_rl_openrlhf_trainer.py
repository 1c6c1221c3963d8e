"""OpenRLHF 0.11's own code paths over a mixed ``code.tests`` batch with 1 in 8 erroring.

Real parts: OpenRLHF's reward client (``SingleTurnAgentExecutor._fetch_rewards_via_http`` against a
live ``verifiers serve``, and ``_fetch_rewards_via_func`` loading our file the way
``--reward.remote_url file.py`` does), its ``_process_response_into_experience`` turning each
rollout into an ``Experience``, and its batching (``make_experience_batch``,
``Experience.concat_experiences``, ``split_experience_batch``), which is where a missing
``extra_logs`` key crashed. One rollout per request, concurrently per prompt group, as the
vLLM engine's ``generate_responses`` sends them.

Two parts are not OpenRLHF's code, and why: vLLM cannot be installed on CPU, and
``samples_generator`` imports three vLLM names at module load (never used by the function
called here), so a module with those three names stands in for ``vllm`` when the real one is
absent. ``experience_maker`` imports flash-attn (CUDA only), so the group estimators
(``rloo``, ``group_norm``) are applied below with OpenRLHF's formulas, on the rewards tensor
its batching produced.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from rl_helpers import ADD_RESPONSES, ADD_TASK, BROKEN_TASK, LiveServer
from verifiers.rl_adapters import openrlhf as adapter
from verifiers.rl_adapters.server import ServerSettings

from verifiers import EngineSettings

pytestmark = [pytest.mark.rl, pytest.mark.bwrap, pytest.mark.slow]


def _import_openrlhf() -> tuple[Any, Any, Any, Any, Any]:
    """OpenRLHF's modules, with a stand-in for vLLM only while they import (module docstring).

    The stand-in leaves ``sys.modules`` afterwards: other libraries (TRL) probe for vLLM and
    must keep seeing that it is absent.
    """
    names = ("vllm", "vllm.inputs", "vllm.utils")
    stand_in = importlib.util.find_spec("vllm") is None
    if stand_in:
        vllm = types.ModuleType("vllm")
        vllm.__spec__ = importlib.machinery.ModuleSpec("vllm", None, is_package=True)
        vllm.__path__ = []
        vllm.SamplingParams = object  # type: ignore[attr-defined]
        inputs = types.ModuleType("vllm.inputs")
        inputs.TokensPrompt = dict  # type: ignore[attr-defined]
        utils = types.ModuleType("vllm.utils")
        utils.random_uuid = str  # type: ignore[attr-defined]
        sys.modules.update({"vllm": vllm, "vllm.inputs": inputs, "vllm.utils": utils})
    try:
        from openrlhf.trainer.ppo_utils import experience
        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
        from openrlhf.utils.agent import SingleTurnAgentExecutor
    finally:
        if stand_in:
            for name in names:
                sys.modules.pop(name, None)
    return (
        experience.Experience,
        experience.make_experience_batch,
        experience.split_experience_batch,
        SamplesGenerator,
        SingleTurnAgentExecutor,
    )


(
    Experience,
    make_experience_batch,
    split_experience_batch,
    SamplesGenerator,
    SingleTurnAgentExecutor,
) = _import_openrlhf()

TASK = json.dumps(ADD_TASK)
BROKEN = json.dumps(BROKEN_TASK)
PROMPTS = ["Write add(a, b):\n", "Write add(a, b), please:\n"]
RESPONSES = ADD_RESPONSES
GROUP = 4
ENGINE = EngineSettings(sandbox="local", timeout_s=60, concurrency=4, cache=False)


def _rollouts() -> list[tuple[str, str, str]]:
    """(query, prompt, label) per rollout; the last rollout's task is broken (1 in 8)."""
    out = []
    for i, response in enumerate(RESPONSES):
        prompt = PROMPTS[i // GROUP]
        label = BROKEN if i == len(RESPONSES) - 1 else TASK
        out.append((prompt + response + "</s>", prompt, label))
    return out


async def _fetch(executor: SingleTurnAgentExecutor, via: str) -> list[dict[str, Any]]:
    """One request per rollout, all of a batch in flight at once (OpenRLHF's shape)."""
    fetch = executor._fetch_rewards_via_http if via == "http" else executor._fetch_rewards_via_func

    async def one(query: str, prompt: str, label: str) -> dict[str, Any]:
        info = (await fetch([query], [prompt], [label]))[0]
        return dict(info)

    return list(await asyncio.gather(*(one(*r) for r in _rollouts())))


def _experience(info: dict[str, Any], rollout: tuple[str, str, str]) -> Experience:
    query, prompt, label = rollout
    tokens = list(query.encode())
    reward = info["rewards"]
    reward = reward.flatten()[0].item() if isinstance(reward, torch.Tensor) else reward[0]
    scores = info.get("scores", info["rewards"])
    scores = scores.flatten()[0].item() if isinstance(scores, torch.Tensor) else scores[0]
    logs = {
        k: (v.flatten()[0].item() if isinstance(v, torch.Tensor) else v[0])
        for k, v in info["extra_logs"].items()
    }
    response = {
        "prompt": prompt,
        "label": label,
        "observation_tokens": tokens,
        "action_ranges": [(len(prompt.encode()), len(tokens))],
        "rollout_log_probs": None,
        "reward": reward,
        "scores": scores,
        "extra_logs": logs,
        "truncated": False,
    }
    return SamplesGenerator._process_response_into_experience(None, response, max_len=4096)  # type: ignore[arg-type]


def _cli_rewards(tmp_path: Path) -> list[float | None]:
    from verifiers.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i, (resp, (_, _, label)) in enumerate(zip(RESPONSES, _rollouts(), strict=True)):
            fh.write(
                json.dumps({"id": str(i), "completion": resp, "task": json.loads(label)}) + "\n"
            )
    assert main(["score", str(src), "-o", str(out), "-q", "--no-cache", "--sandbox", "local"]) == 0
    return [json.loads(line)["reward"] for line in out.read_text(encoding="utf-8").splitlines()]


def _check_batch(
    infos: list[dict[str, Any]], expected: list[float | None], components: bool
) -> None:
    items = [_experience(info, r) for info, r in zip(infos, _rollouts(), strict=True)]
    batch = make_experience_batch(items)  # raised KeyError on a missing extra_logs key
    merged = Experience.concat_experiences(items, pad_token_id=0)
    split_experience_batch(merged)  # raised ValueError on unequal per-key lists
    rewards = batch.rewards.float()
    assert torch.isfinite(rewards).all()
    judged = [i for i, e in enumerate(expected) if e is not None]
    assert judged == list(range(7)) and expected[7] is None
    assert [rewards[i].item() for i in judged] == [expected[i] for i in judged]
    assert rewards[7].item() == pytest.approx(sum(expected[4:7]) / 3)  # type: ignore[arg-type]
    valid = torch.stack(list(batch.info["verifiers_valid"])).flatten().tolist()
    assert valid == [1.0] * 7 + [0.0]
    errors = torch.stack(list(batch.info["verifiers_error_bad_input"])).flatten()
    assert errors.sum().item() == 1.0  # counted
    assert ("tests_passed" in batch.info) == components
    grouped = rewards.reshape(-1, GROUP)
    rloo = grouped - (grouped.sum(-1, keepdim=True) - grouped) / (GROUP - 1)
    group_norm = (grouped - grouped.mean(-1, keepdim=True)) / (grouped.std(-1, keepdim=True) + 1e-9)
    for adv in (rloo, group_norm):
        assert torch.isfinite(adv).all()
        assert adv.reshape(-1)[7].item() == pytest.approx(0.0, abs=1e-6)


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[float | None]:
    return _cli_rewards(tmp_path_factory.mktemp("cli"))


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    settings = ServerSettings(engine=ENGINE, group_size=GROUP, components=["tests_passed"])
    with LiveServer(settings) as srv:
        yield srv


def test_remote_reward_client_against_verifiers_serve(
    server: LiveServer, expected: list[float | None]
) -> None:
    executor = SingleTurnAgentExecutor(remote_rm_url=f"{server.url}/get_reward")
    infos = asyncio.run(_fetch(executor, "http"))
    _check_batch(infos, expected, components=True)


@pytest.mark.parametrize("components", ["", "tests_passed"])
def test_file_mode_from_environment(
    monkeypatch: pytest.MonkeyPatch, expected: list[float | None], components: str
) -> None:
    monkeypatch.setenv("VERIFIERS_GROUP_SIZE", str(GROUP))
    monkeypatch.setenv("VERIFIERS_COMPONENTS", components)
    monkeypatch.setenv("VERIFIERS_SANDBOX", "local")
    monkeypatch.setenv("VERIFIERS_TIMEOUT_S", "60")
    monkeypatch.setenv("VERIFIERS_CACHE", "off")
    assert adapter.__file__ is not None
    executor = SingleTurnAgentExecutor(remote_rm_url=adapter.__file__)  # OpenRLHF loads the file
    assert executor.reward_func is not None
    try:
        infos = asyncio.run(_fetch(executor, "func"))
    finally:
        func = executor.reward_func.__globals__.get("_env_func")
        if func is not None:
            func.scorer.close()
    _check_batch(infos, expected, components=bool(components))
