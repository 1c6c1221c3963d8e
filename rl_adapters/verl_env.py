"""veRL 0.9 tools over one episode per *request* (``verl.tools.base_tool.BaseTool``).

veRL's ``ToolAgentLoop`` calls ``create`` / ``execute`` / ``release`` around *every single*
tool call (a fresh instance id each time), so nothing about the rollout can live on the
instance: the episode is keyed by the request (``agent_data.request_id``, passed to
``execute``) and shared by the five tools of one rollout. Configure them in veRL's tool config
(``actor_rollout_ref.rollout.multi_turn.tool_config_path``)::

    tools:
      - class_name: verifiers.rl_adapters.verl_env.WorkspaceTool
        config: {type: native, action: run_command}
      - class_name: verifiers.rl_adapters.verl_env.WorkspaceTool
        config: {type: native, action: write_file}
      # ... read_file, list_files, submit

Each row's ``tools_kwargs`` gives every tool ``{"create_kwargs": {"task": {...}, "episode":
{...}}}`` (the task as a dict or JSON string). ``submit``'s step reward is the attempt's
reward (0.0 while it cannot be judged: veRL sums step rewards as plain floats, so abstains
must go through the final result instead).

**The reward of the rollout is the episode's final result.** veRL runs the tools in its agent
loop worker and the reward manager in a reward loop worker (another process, maybe another
node), and the one thing that travels from one to the other with the sample is
``agent_data.extra_fields`` (veRL's own slot for tool session data: the agent loop hands it
to the reward worker as ``tool_extra_fields``). So every call stamps
``extra_fields["verifiers_request"]`` (the request id) and the call that ends the episode
(a final submit, an exhausted budget, a lost sandbox) writes ``extra_fields
["verifiers_result"]``: the final :class:`~verifiers.Result` as JSON.
:class:`~verifiers.rl_adapters.verl_manager.VerifiersRewardManager` rewards that result
instead of re-scoring the text: an abstain stays an abstain (``error`` -> the group's judged
mean, zero advantage; never 0), and a rollout that opened an episode but never finished it is
the model's ``fail`` (0). A submit that leaves the episode open (tries left) writes what
:meth:`~verifiers.Episode.finish` would give at that point, so a rollout that stops after a
partial score keeps it. The last results also stay in :func:`episode_result` (bounded) for
callers in the same process; an episode nobody submitted is judged and closed by
:func:`finish_request`, and one left idle past ``idle_s`` is closed (judged) at the next
``create``.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, ClassVar

from verifiers.engine import Engine, EngineSettings
from verifiers.episode import Episode
from verifiers.errors import BadInput
from verifiers.types import Result

from . import _tools

try:
    from verl.tools.base_tool import BaseTool as _Base
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
except ImportError as exc:  # pragma: no cover - only without veRL
    raise ImportError(
        f"verifiers.rl_adapters.verl_env needs veRL 0.9 (pip install verifiers[verl]): {exc}"
    ) from None

__all__ = ["WorkspaceTool", "episode_result", "finish_request"]

_KEPT_RESULTS = 4096
"""Final results kept for :func:`episode_result` (the oldest go first: a long run finishes
millions of requests; the reward manager reads them from the sample, not from here)."""
REQUEST_FIELD = "verifiers_request"
"""``agent_data.extra_fields`` key: the request id of the rollout's episode."""
RESULT_FIELD = "verifiers_result"
"""``agent_data.extra_fields`` key: the episode's final result, as JSON."""


class _Requests:
    """Episodes by request id, on one event loop (veRL's agent loop worker)."""

    engines: ClassVar[dict[int, Engine]] = {}
    episodes: ClassVar[dict[str, tuple[Episode, float]]] = {}
    results: ClassVar[OrderedDict[str, Result]] = OrderedDict()
    lock: ClassVar[asyncio.Lock | None] = None


def episode_result(request_id: str) -> Result | None:
    """The final result of a request's episode, once it finished (then forgotten: pop)."""
    return _Requests.results.pop(request_id, None)


async def finish_request(request_id: str) -> Result | None:
    """Judge and close a request's episode (the final tree of a workspace task)."""
    held = _Requests.episodes.pop(request_id, None)
    if held is None:
        return _Requests.results.get(request_id)
    result = await held[0].finish()
    _Requests.results[request_id] = result
    while len(_Requests.results) > _KEPT_RESULTS:
        _Requests.results.popitem(last=False)
    return result


class WorkspaceTool(_Base):  # type: ignore[misc,valid-type]
    """One action (``config["action"]``) on the request's episode (module docstring)."""

    engine_settings: ClassVar[EngineSettings | None] = None
    idle_s: ClassVar[float] = 1800.0

    def __init__(
        self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None
    ) -> None:
        action = str(config.get("action", ""))
        names = [spec.name for spec in _tools.TOOLS]
        if action not in names:
            raise ValueError(
                f"WorkspaceTool config 'action' must be one of {names}, got {action!r}"
            )
        self.action = action
        self._created: dict[str, dict[str, Any]] = {}
        if tool_schema is None:
            tool_schema = OpenAIFunctionToolSchema.model_validate(_tools.openai_schema(action))
        super().__init__(config, tool_schema)

    async def create(
        self, instance_id: str | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        """Remember this call's ``create_kwargs`` (the task); close idle episodes."""
        from uuid import uuid4

        instance = instance_id or str(uuid4())
        self._created[instance] = dict(kwargs.get("create_kwargs") or {})
        now = time.monotonic()
        for request_id, (_, last) in list(_Requests.episodes.items()):
            if now - last > self.idle_s:
                await finish_request(request_id)
        return instance, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """Run the action on the episode of ``kwargs["agent_data"].request_id``."""
        agent_data = kwargs.get("agent_data")
        request_id = str(getattr(agent_data, "request_id", "") or instance_id)
        episode = await self._episode(request_id, self._created.get(instance_id, {}))
        if isinstance(episode, str):
            return ToolResponse(text=episode), 0.0, {}
        fields = getattr(agent_data, "extra_fields", None)
        if isinstance(fields, dict):
            fields[REQUEST_FIELD] = request_id
        reply = await _tools.call_tool(episode, self.action, parameters)
        result: Result | None = None
        if episode.done:
            result = await finish_request(request_id)
        else:
            _Requests.episodes[request_id] = (episode, time.monotonic())
            if reply.step is not None and reply.step.attempt:
                # The rollout may end here (the model stops after a partial score): what
                # finish() would give now, rewritten by every later submit and by the end.
                result = episode.result_so_far()
        if isinstance(fields, dict) and result is not None:
            fields[RESULT_FIELD] = result.json_safe().model_dump_json()
        return ToolResponse(text=reply.text), reply.reward, {"action": self.action}

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget this call's instance (the episode lives on with its request)."""
        self._created.pop(instance_id, None)

    async def _episode(self, request_id: str, create: dict[str, Any]) -> Episode | str:
        held = _Requests.episodes.get(request_id)
        if held is not None:
            return held[0]
        try:
            item = _tools.episode_item(
                create.get("task"),
                episode=create.get("episode"),
                ident=request_id,
                where="tools_kwargs create_kwargs",
            )
            episode = _tools.engine_for_loop(_Requests.engines, self.engine_settings).episode(item)
        except BadInput as exc:
            return f"bad task: {exc}"
        await episode.start()
        _Requests.episodes[request_id] = (episode, time.monotonic())
        return episode
