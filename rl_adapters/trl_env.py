"""TRL ``environment_factory``: one :class:`~verifiers.SyncEpisode` per rollout.

TRL (>= 1.16, ``GRPOTrainer(environment_factory=...)``) constructs the class with no
arguments, pools the instances, calls ``reset(**row)`` before each rollout (a returned string is
appended to the last user message), exposes every public method as a tool (schema from its
type hints and Google docstring) and, because the class defines ``get_reward``, calls it once
per finished rollout as an extra reward source logged under the class name
(``rewards/VerifiersEnv/mean``)::

    from verifiers.rl_adapters.trl_env import VerifiersEnv

    trainer = GRPOTrainer(
        model=model,
        args=GRPOConfig(...),
        train_dataset=dataset,            # a "task" column (JSON string or dict) per row
        environment_factory=VerifiersEnv,
    )

Each row carries ``task`` (the trajectory's task: ``{"verifier": "code.workspace", "spec":
{...}}``) and optionally ``episode`` (budgets and policies, :class:`~verifiers.EpisodeSettings`),
both as dicts or JSON strings. ``get_reward`` returns the episode's final reward, ``None`` when
it could not be judged (TRL's abstain), never 0.0 for a verifier fault. Tool errors the model
caused come back as the tool's text so the model can react. The sandbox engine is shared by
every instance (one background loop, one warm pool); set :attr:`VerifiersEnv.engine_settings`
before building the trainer to choose the backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from verifiers.engine import EngineSettings
from verifiers.episode import Step, SyncEpisode
from verifiers.errors import BadInput
from verifiers.types import Result

from . import _tools

__all__ = ["VerifiersEnv"]

F = TypeVar("F", bound=Callable[..., str])


def _documented(function: F) -> F:
    """Give a tool method the table's Google docstring (TRL renders the schema from it)."""
    function.__doc__ = _tools.google_docstring(function.__name__)
    return function


class VerifiersEnv:
    """A TRL environment over one ``verifiers`` episode per rollout (see the module docstring)."""

    engine_settings: ClassVar[EngineSettings | None] = None
    """Engine (sandbox backend) for every instance; default: from ``VERIFIERS_*`` variables."""
    episode_overrides: ClassVar[dict[str, Any]] = {}
    """Episode settings applied over each row's ``episode`` column."""

    def __init__(self) -> None:
        self._episode: SyncEpisode | None = None
        self._result: Result | None = None
        self.last_step: Step | None = None
        self.problem: str | None = None

    # -- TRL's contract -----------------------------------------------------------------

    def reset(self, **row: Any) -> str | None:
        """Start a fresh episode for ``row``; returns what the model should know first."""
        self._close()
        self._result = None
        self.last_step = None
        self.problem = None
        try:
            item = _tools.row_item(row, where="the row")
            self._episode = SyncEpisode(
                item,
                engine=self.engine_settings or EngineSettings.from_env(),
                **self.episode_overrides,
            )
            self._episode.__enter__()
        except BadInput as exc:
            self.problem = f"bad task row: {exc}"
            self._episode = None
            return None
        return "\n\n" + self._episode.run_async(_tools.opening(self._episode.episode))

    def get_reward(self) -> float | None:
        """The episode's final reward; ``None`` when it could not be judged (abstain)."""
        result = self.final_result
        return None if result.status in ("error", "skipped") else result.reward

    # -- tools (public methods: TRL exposes each one to the model; texts from _tools) ----

    @_documented
    def run_command(self, command: str) -> str:
        return self._call("run_command", command=command)

    @_documented
    def write_file(self, path: str, content: str) -> str:
        return self._call("write_file", path=path, content=content)

    @_documented
    def read_file(self, path: str) -> str:
        return self._call("read_file", path=path)

    @_documented
    def list_files(self) -> str:
        return self._call("list_files")

    @_documented
    def submit(self, answer: str = "") -> str:
        return self._call("submit", answer=answer)

    # -- helpers ------------------------------------------------------------------------

    @property
    def final_result(self) -> Result:
        """The episode's final :class:`~verifiers.Result` (finishes the episode). A property,
        so TRL does not offer it to the model as a tool."""
        if self._result is None:
            if self._episode is None:
                self._result = Result.errored("bad_input", self.problem or "no episode was started")
            else:
                self._result = self._episode.finish()
                self._close()
        return self._result

    def _call(self, name: str, **arguments: Any) -> str:
        episode = self._episode
        if episode is None:
            return self.problem or "no episode is running"
        reply = episode.run_async(_tools.call_tool(episode.episode, name, arguments))
        if reply.step is not None:
            self.last_step = reply.step
        return reply.text

    def _close(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            episode.__exit__(None, None, None)
