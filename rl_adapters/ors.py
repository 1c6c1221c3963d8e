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

import asyncio
import json
import os
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from verifiers.engine import Engine, EngineSettings
from verifiers.episode import Episode, ToolRefused
from verifiers.errors import BadInput, MissingDependency

try:
    from openreward.environments import Environment, TextBlock, ToolOutput, tool
except ImportError:  # pragma: no cover - only without the extra
    raise MissingDependency("openreward", "ors") from None

__all__ = ["WorkspaceEnvironment", "build_app", "mount"]

_OUTPUT_CHARS = 4000


class CommandArgs(BaseModel):
    command: str = Field(description="The shell command line, run in the workspace root.")


class WriteArgs(BaseModel):
    path: str = Field(description="Path relative to the workspace root.")
    content: str = Field(description="The complete new text of the file.")


class PathArgs(BaseModel):
    path: str = Field(description="Path relative to the workspace root.")


class NoArgs(BaseModel):
    pass


class SubmitArgs(BaseModel):
    answer: str = Field(
        default="", description="The answer (answer tasks); workspace tasks ignore it."
    )


def _text(text: str, *, reward: float | None = None, finished: bool = False) -> ToolOutput:
    return ToolOutput(blocks=[TextBlock(text=text)], reward=reward, finished=finished)


class WorkspaceEnvironment(Environment):  # type: ignore[misc]  # openreward is untyped
    """One ORS session = one episode of a task row (module docstring)."""

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

    @classmethod
    def _engine(cls) -> Engine:
        key = id(asyncio.get_running_loop())
        engine = cls._engines.get(key)
        if engine is None:
            engine = Engine(cls.engine_settings or EngineSettings.from_env())
            cls._engines[key] = engine
        return engine

    async def setup(self) -> None:
        try:
            self.episode = self._engine().episode({**self.row, "completion": ""})
            await self.episode.start()
        except BadInput as exc:
            self.problem = f"bad task: {exc}"

    async def teardown(self) -> None:
        if self.episode is not None:
            await self.episode.close()

    async def get_prompt(self) -> list[TextBlock]:
        prompt = str(self.row.get("prompt") or "")
        files: list[str] = []
        if self.episode is not None:
            try:
                files = await self.episode.list_files()
            except ToolRefused:
                files = []
        listing = "\n".join(files) if files else "(none)"
        return [TextBlock(text=f"{prompt}\n\nFiles in your workspace:\n{listing}")]

    def _live(self) -> Episode | ToolOutput:
        if self.episode is None:
            return _text(self.problem or "no episode is running", reward=None, finished=True)
        return self.episode

    @tool  # type: ignore[untyped-decorator]
    async def run_command(self, args: CommandArgs) -> ToolOutput:
        """Run a shell command in the workspace; returns exit code, stdout and stderr."""
        episode = self._live()
        if isinstance(episode, ToolOutput):
            return episode
        out = await episode.run(args.command)
        return _text(
            f"exit code: {out.returncode}\nstdout:\n{out.text()[-_OUTPUT_CHARS:]}"
            f"\nstderr:\n{out.text('stderr')[-_OUTPUT_CHARS:]}"
        )

    @tool  # type: ignore[untyped-decorator]
    async def write_file(self, args: WriteArgs) -> ToolOutput:
        """Create or overwrite a text file in the workspace."""
        episode = self._live()
        if isinstance(episode, ToolOutput):
            return episode
        try:
            await episode.write_file(args.path, args.content)
        except ToolRefused as exc:
            return _text(str(exc))
        return _text("ok")

    @tool  # type: ignore[untyped-decorator]
    async def read_file(self, args: PathArgs) -> ToolOutput:
        """Read a text file of the workspace."""
        episode = self._live()
        if isinstance(episode, ToolOutput):
            return episode
        try:
            return _text(await episode.read_file(args.path))
        except ToolRefused as exc:
            return _text(str(exc))

    @tool  # type: ignore[untyped-decorator]
    async def list_files(self, args: NoArgs) -> ToolOutput:
        """List the workspace's files."""
        episode = self._live()
        if isinstance(episode, ToolOutput):
            return episode
        try:
            return _text("\n".join(await episode.list_files()))
        except ToolRefused as exc:
            return _text(str(exc))

    @tool(exclusive=True)  # type: ignore[untyped-decorator]
    async def submit(self, args: SubmitArgs) -> ToolOutput:
        """Submit your work to be graded; returns the grade and feedback."""
        episode = self._live()
        if isinstance(episode, ToolOutput):
            return episode
        step = await episode.submit(args.answer or None)
        if not step.done:
            return _text(step.feedback, reward=step.reward)
        result = await episode.finish()
        reward = None if result.status in ("error", "skipped") else result.reward
        return _text(step.feedback, reward=reward, finished=True)


def build_app(splits: dict[str, list[dict[str, Any]]], engine: EngineSettings | None = None) -> Any:
    """The ORS FastAPI app serving ``splits`` (split name -> task rows)."""
    from openreward.environments import Server

    cls = type(
        "WorkspaceEnvironment",
        (WorkspaceEnvironment,),
        {"splits": dict(splits), "engine_settings": engine},
    )
    return Server([cls]).app


def mount(app: Any) -> None:
    """Mount the ORS routes at the server's root, behind every route ``verifiers serve``
    already has (the ``openreward`` client addresses them from the host root, so they cannot
    live under a prefix), serving the JSONL of task rows that ``VERIFIERS_ORS_TASKS`` names as
    split ``train``. Point ORS clients at ``http://host:port/``."""
    path = os.environ["VERIFIERS_ORS_TASKS"]
    rows = [
        json.loads(line)
        for line in Path(path).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    app.mount("/", build_app({"train": rows}))
