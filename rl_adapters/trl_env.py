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

import json
from typing import Any, ClassVar

from verifiers.engine import EngineSettings
from verifiers.episode import Step, SyncEpisode, ToolRefused
from verifiers.errors import BadInput
from verifiers.types import Result

__all__ = ["VerifiersEnv"]

_OUTPUT_CHARS = 4000
"""Most characters of a command's stdout (and of its stderr) shown to the model per call."""


def _loads(value: Any, what: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise BadInput(f"row column {what!r} is not valid JSON: {exc}") from None
    return value


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
        task = _loads(row.get("task"), "task")
        if not isinstance(task, dict):
            self.problem = "row has no 'task' column (a dict or a JSON string)"
            return None
        item: dict[str, Any] = {"task": task, "completion": ""}
        if row.get("id") is not None:
            item["id"] = str(row["id"])
        if isinstance(row.get("prompt"), str):
            item["prompt"] = row["prompt"]
        episode = _loads(row.get("episode"), "episode")
        if isinstance(episode, dict):
            item["episode"] = episode
        try:
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
        try:
            files = self._episode.list_files()
        except ToolRefused:
            return None
        return "\n\nFiles in your workspace:\n" + ("\n".join(files) if files else "(none)")

    def get_reward(self) -> float | None:
        """The episode's final reward; ``None`` when it could not be judged (abstain)."""
        result = self.final_result
        return None if result.status in ("error", "skipped") else result.reward

    # -- tools (public methods: TRL exposes each one to the model) ----------------------

    def run_command(self, command: str) -> str:
        """Run a shell command in the workspace (its root is the current directory).

        Args:
            command: The command line, for example "python3 -m pytest -q" or "ls -la".

        Returns:
            The exit code, then the command's stdout and stderr.
        """
        episode = self._live()
        if isinstance(episode, str):
            return episode
        out = episode.run(command)
        text = f"exit code: {out.returncode}"
        if out.timed_out:
            text += " (timed out)"
        text += "\nstdout:\n" + out.text()[-_OUTPUT_CHARS:]
        text += "\nstderr:\n" + out.text("stderr")[-_OUTPUT_CHARS:]
        return text

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace.

        Args:
            path: The file's path relative to the workspace root, for example "src/app.py".
            content: The complete new text of the file.

        Returns:
            "ok", or why the write was refused.
        """
        episode = self._live()
        if isinstance(episode, str):
            return episode
        try:
            episode.write_file(path, content)
        except ToolRefused as exc:
            return str(exc)
        return "ok"

    def read_file(self, path: str) -> str:
        """Read a text file of the workspace.

        Args:
            path: The file's path relative to the workspace root.

        Returns:
            The file's text, or why it could not be read.
        """
        episode = self._live()
        if isinstance(episode, str):
            return episode
        try:
            return episode.read_file(path)
        except ToolRefused as exc:
            return str(exc)

    def list_files(self) -> str:
        """List the files of the workspace.

        Returns:
            One path per line.
        """
        episode = self._live()
        if isinstance(episode, str):
            return episode
        try:
            return "\n".join(episode.list_files())
        except ToolRefused as exc:
            return str(exc)

    def submit(self, answer: str = "") -> str:
        """Submit your work to be graded and get feedback; you may fix it and submit again.

        Args:
            answer: The final answer, for tasks that grade an answer. Workspace tasks grade
                the files in the workspace and ignore it.

        Returns:
            The grade and the grader's feedback.
        """
        episode = self._live()
        if isinstance(episode, str):
            return episode
        step = episode.submit(answer or None)
        self.last_step = step
        more = "" if not step.done else "\nNo more attempts: the episode is over."
        return f"{step.feedback}{more}"

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

    def _live(self) -> SyncEpisode | str:
        if self._episode is None:
            return self.problem or "no episode is running"
        return self._episode

    def _close(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            episode.__exit__(None, None, None)
