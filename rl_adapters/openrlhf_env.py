"""OpenRLHF ``AgentInstance``: one episode per rollout of OpenRLHF's multi-turn agent executor.

OpenRLHF (>= 0.11, ``--agent_func_path file.py`` whose module defines ``AgentInstance``) builds
one instance per prompt, awaits ``reset({"observation": prompt, "label": label})`` and then
``step({"observation_text", "action_text", "label", ...})`` after every generation, appending
the returned ``environment_feedback`` to the context until ``done``. Rewards are summed over
steps; here every step but the last returns 0 and the last returns the episode's final
reward, so the sum *is* the episode reward::

    # agent_func.py, passed as --agent_func_path
    from verifiers.rl_adapters.openrlhf_env import VerifiersAgent as AgentInstance
    AgentInstance.group_size = 8      # --rollout.n_samples_per_prompt

``label`` is the row's task as JSON (``{"verifier": ..., "spec": ..., "episode": {...}}``;
``episode`` holds :class:`~verifiers.EpisodeSettings`). The model acts with tool calls in the
Hermes/Qwen form ``<tool_call>{"name": "run_command", "arguments": {...}}</tool_call>`` (tools:
``run_command``, ``write_file``, ``read_file``, ``list_files``, ``submit``); a turn without
a tool call is its final answer (workspace tasks: the tree is judged). Feedback comes back as
a tool message in ChatML (``feedback_prefix``/``feedback_suffix``; set them for another chat
template).

Abstain: OpenRLHF has no per-sample abstain and a NaN voids the step, so an episode that could
not be judged gets its group's judged mean (:class:`~verifiers.rl_adapters._groups.GroupBaseline`,
keyed by the prompt and label): zero advantage under every group estimator. Every judged episode
joins the same tally. ``extra_logs`` always has the same keys.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, ClassVar

from verifiers.engine import Engine, EngineSettings
from verifiers.episode import Episode
from verifiers.errors import BadInput
from verifiers.types import Result

from . import _tools
from ._groups import GroupBaseline

try:  # the base class when OpenRLHF is installed; a plain object otherwise (import stays light)
    from openrlhf.utils.agent import AgentInstanceBase as _Base
except ImportError:  # pragma: no cover - exercised only without openrlhf
    _Base = object

__all__ = ["VerifiersAgent", "parse_tool_call"]

_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def parse_tool_call(text: str) -> tuple[str, Any] | None:
    """The first ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` in ``text``.

    Returns ``None`` when there is none; a malformed one is returned as the pseudo tool
    ``"invalid"`` with the reason, so the model is told what was wrong. The arguments are
    returned as given: :func:`~verifiers.rl_adapters._tools.check_arguments` judges them, with
    the words every other trainer's layer uses.
    """
    match = _TOOL_CALL.search(text)
    if match is None:
        return None
    try:
        call = json.loads(match.group(1))
    except ValueError as exc:
        return "invalid", {"reason": f"the tool call is not JSON: {exc}"}
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return "invalid", {"reason": 'a tool call is {"name": ..., "arguments": {...}}'}
    return call["name"], call.get("arguments")


class _Shared:
    """One engine and one group tally per event loop (OpenRLHF runs agents on its own loop)."""

    engines: ClassVar[dict[int, Engine]] = {}
    groups: ClassVar[dict[int, GroupBaseline]] = {}

    @classmethod
    def engine(cls, settings: EngineSettings | None) -> Engine:
        return _tools.engine_for_loop(cls.engines, settings)

    @classmethod
    def group(cls, size: int, wait_s: float) -> GroupBaseline:
        key = id(asyncio.get_running_loop())
        group = cls.groups.get(key)
        if group is None or group.size != size:
            group = GroupBaseline(size, wait_s=wait_s)
            cls.groups[key] = group
        return group


class VerifiersAgent(_Base):  # type: ignore[misc,valid-type]
    """OpenRLHF ``AgentInstance`` over one :class:`~verifiers.Episode` (module docstring)."""

    engine_settings: ClassVar[EngineSettings | None] = None
    group_size: ClassVar[int] = 1
    """Samples per prompt (``--rollout.n_samples_per_prompt``): the abstain's group."""
    group_wait_s: ClassVar[float] = 120.0
    feedback_prefix: ClassVar[str] = "<|im_end|>\n<|im_start|>user\n<tool_response>\n"
    feedback_suffix: ClassVar[str] = "\n</tool_response><|im_end|>\n<|im_start|>assistant\n"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._episode: Episode | None = None
        self._key = ""
        self.problem: str | None = None
        self.result: Result | None = None

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Open the episode for ``states["label"]``; the observation gains the file list."""
        observation = str(states.get("observation", ""))
        label = states.get("label")
        self._key = f"{label}\x00{observation}"
        try:
            item = _tools.episode_item(label, prompt=observation, where="the label")
            self._episode = _Shared.engine(self.engine_settings).episode(item)
            await self._episode.start()
        except BadInput as exc:
            self.problem = f"bad task label: {exc}"
            return {"observation": observation}
        return {"observation": f"{observation}\n{await _tools.opening(self._episode)}\n"}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Run the tool call in ``states["action_text"]``, or finish on a final answer."""
        action = str(states.get("action_text", ""))
        episode = self._episode
        if episode is None:
            return await self._final(Result.errored("bad_input", self.problem or "no episode"))
        call = parse_tool_call(action)
        if call is None:  # a final answer
            if not episode.done:
                await episode.submit(action)
            return await self._final(await episode.finish())
        name, arguments = call
        if name == "invalid":
            text = str(arguments.get("reason"))
        else:
            text = (await _tools.call_tool(episode, name, arguments)).text
        if episode.done:
            return await self._final(await episode.finish(), feedback=text)
        return self._reply(0.0, text, done=False)

    async def _final(self, result: Result, feedback: str = "") -> dict[str, Any]:
        self.result = result
        judged = result.reward if result.status not in ("error", "skipped") else None
        (reward,) = await _Shared.group(self.group_size, self.group_wait_s).settle(
            [self._key], [judged]
        )
        text = feedback or result.feedback or ""
        reply = self._reply(reward, text, done=True)
        reply["extra_logs"] = _logs(valid=judged is not None, reward=reward)
        return reply

    def _reply(self, reward: float, text: str, *, done: bool) -> dict[str, Any]:
        import torch

        return {
            "rewards": torch.tensor(reward),
            "scores": torch.tensor(reward),
            "environment_feedback": ""
            if done
            else f"{self.feedback_prefix}{text}{self.feedback_suffix}",
            "done": done,
            "extra_logs": _logs(valid=True, reward=0.0),
        }


def _logs(*, valid: bool, reward: float) -> dict[str, Any]:
    import torch

    return {
        "verifiers_valid": torch.tensor(1.0 if valid else 0.0),
        "verifiers_episode_reward": torch.tensor(reward),
    }
