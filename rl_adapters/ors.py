"""The Open Reward Standard's environment routes, backed by episodes.

ORS (the ``openreward`` package's protocol; TRL's ``OpenRewardSpec``, SkyRL and ROLL consume it)
serves environments: list environments, splits and tasks, open a session on a task, list its
tools, call them, and get a reward (``null`` when the episode could not be judged) when a tool
call finishes the episode. Rather than re-implement the wire protocol (sessions streamed over
SSE, resumable calls), this module defines an ``openreward.environments.Environment`` whose
tools drive one :class:`~verifiers.Episode` per session and serves it with ``openreward``'s own
``Server``, so the routes are the standard's by construction::

    VERIFIERS_ORS_TASKS=tasks.jsonl verifiers serve ...   # ORS routes beside /v1/*
    # or stand-alone:
    from verifiers.rl_adapters.ors import build_app
    app = build_app({"train": rows})            # rows: task rows as in datasets/workspace

The environment is called ``workspace``. Each task row is ``{"id", "prompt", "task": {...},
"episode": {...}}``. ``submit`` returns ``reward`` (and ``finished=True`` when the episode is
over: full credit, no attempts left, a budget spent); an abstain is ``reward: null``.
Install with ``pip install verifiers[ors]``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from verifiers.engine import Engine, EngineSettings
from verifiers.episode import Episode
from verifiers.errors import BadInput, MissingDependency

from . import _tools

try:
    from openreward.environments import Environment, TextBlock, ToolOutput, tool
except ImportError:  # pragma: no cover - only without the extra
    raise MissingDependency("openreward", "ors") from None

__all__ = ["WorkspaceEnvironment", "build_app", "mount"]


def _text(text: str, *, reward: float | None = None, finished: bool = False) -> ToolOutput:
    return ToolOutput(blocks=[TextBlock(text=text)], reward=reward, finished=finished)


class WorkspaceEnvironment(Environment):  # type: ignore[misc]  # openreward is untyped
    """One ORS session = one episode of a task row (module docstring). Its tools are made
    from :data:`verifiers.rl_adapters._tools.TOOLS` below the class."""

    splits: ClassVar[dict[str, list[dict[str, Any]]]] = {}
    engine_settings: ClassVar[EngineSettings | None] = None
    _engines: ClassVar[dict[int, Engine]] = {}

    def __init__(self, task_spec: dict[str, Any] = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006  # the base's signature
        super().__init__(task_spec, secrets)
        self.row = dict(task_spec)
        self.episode: Episode | None = None
        self.problem: str | None = None

    @classmethod
    def name(cls) -> str:
        return "workspace"

    @classmethod
    def list_splits(cls) -> list[str]:
        return list(cls.splits)

    @classmethod
    def list_tasks(cls, split: str) -> list[dict[str, Any]]:
        return list(cls.splits.get(split, []))

    async def setup(self) -> None:
        try:
            item = _tools.row_item(self.row, where="the task row")
            self.episode = _tools.engine_for_loop(self._engines, self.engine_settings).episode(item)
            await self.episode.start()
        except BadInput as exc:
            self.problem = f"bad task: {exc}"

    async def teardown(self) -> None:
        if self.episode is not None:
            await self.episode.close()

    async def get_prompt(self) -> list[TextBlock]:
        prompt = str(self.row.get("prompt") or "")
        files = (
            await _tools.opening(self.episode)
            if self.episode is not None
            else _tools.opening_text([])
        )
        return [TextBlock(text=f"{prompt}\n\n{files}")]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """One tool call through the shared dispatch; ``submit`` that ends the episode
        carries the final reward (``None``: an abstain)."""
        episode = self.episode
        if episode is None:
            return _text(self.problem or "no episode is running", reward=None, finished=True)
        reply = await _tools.call_tool(episode, name, arguments)
        if reply.step is None:
            return _text(reply.text)
        if not episode.done:
            return _text(reply.text, reward=reply.step.reward)
        result = await episode.finish()
        reward = None if result.status in ("error", "skipped") else result.reward
        return _text(reply.text, reward=reward, finished=True)


def _ors_tool(spec: _tools.ToolSpec) -> Any:
    """An ORS ``@tool`` method for one tool of the table (its schema from the table's model)."""

    async def call(self: WorkspaceEnvironment, args: Any) -> ToolOutput:
        return await self.call(spec.name, args.model_dump())

    call.__name__ = call.__qualname__ = spec.name
    call.__doc__ = spec.description
    call.__annotations__ = {"args": _tools.args_model(spec.name), "return": ToolOutput}
    # submit is exclusive: no other call of the session runs while it judges the tree
    return tool(exclusive=True)(call) if spec.name == "submit" else tool(call)


for _spec in _tools.TOOLS:
    setattr(WorkspaceEnvironment, _spec.name, _ors_tool(_spec))
del _spec


def build_app(splits: dict[str, list[dict[str, Any]]], engine: EngineSettings | None = None) -> Any:
    """The ORS FastAPI app serving ``splits`` (split name -> task rows)."""
    from openreward.environments import Server

    cls = type(
        "WorkspaceEnvironment",
        (WorkspaceEnvironment,),
        # its own engines: two apps in one process never share (or close) each other's pool
        {"splits": dict(splits), "engine_settings": engine, "_engines": {}},
    )
    return Server([cls]).app


def mount(app: Any, engine: EngineSettings | None = None) -> None:
    """Mount the ORS routes at the server's root, behind every route ``verifiers serve``
    already has (the ``openreward`` client addresses them from the host root, so they cannot
    live under a prefix), serving the JSONL of task rows that ``VERIFIERS_ORS_TASKS`` names as
    split ``train``. Point ORS clients at ``http://host:port/``."""
    from verifiers.settings import env

    from .openenv import load_rows

    rows = load_rows(env("VERIFIERS_ORS_TASKS") or "")
    app.mount("/", build_app({"train": rows}, engine))
