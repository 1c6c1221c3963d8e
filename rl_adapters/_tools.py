"""The tool set of an episode, written once for every trainer's environment API.

TRL (``trl_env``), veRL (``verl_env``), OpenRLHF (``openrlhf_env``), the Open Reward Standard
(``ors``) and OpenEnv (``openenv``) each offer the model the same five tools over one
:class:`~verifiers.Episode`. What a tool *is* lives here and nowhere else:

* **the table** (:data:`TOOLS`): names, what each does, its arguments and what it returns.
  Every API renders its schema from it: TRL's Google docstrings (:func:`google_docstring`),
  JSON Schema for veRL/OpenEnv (:func:`json_schema`, :func:`openai_schema`), pydantic models
  for ORS (:func:`args_model`);
* **argument validation** (:func:`check_arguments`): an unknown tool, a missing, unknown or
  mistyped argument gets one wording whichever trainer carried the call, and it is text for the
  model (a :class:`~verifiers.episode.ToolRefused`), never an exception out of the trainer;
* **dispatch** (:func:`call_tool`): the tool's call on the episode;
* **the text the model reads back** (:func:`command_text`, :func:`listing`, :func:`opening`,
  the submit feedback): the same on every backend, so the same trajectory reads the same.

Why one module: a second copy of any of these drifts (one API coerced ``42`` to ``"42"``,
another refused it; one said ``(timed out)``, the others did not), and a model trained through
one trainer then meets other words through another. The trainers' layers only translate their
own calling convention (TRL's keyword methods, veRL's ``execute``, OpenRLHF's ``<tool_call>``
text, ORS's ``@tool`` models, OpenEnv's actions) into :func:`call_tool`.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from verifiers.episode import Episode, Step, ToolRefused
from verifiers.errors import BadInput

if TYPE_CHECKING:
    from verifiers.sandbox import ExecResult

    from verifiers.engine import Engine, EngineSettings

__all__ = [
    "OUTPUT_CHARS",
    "TOOLS",
    "Param",
    "ToolReply",
    "ToolSpec",
    "args_model",
    "call_tool",
    "check_arguments",
    "command_text",
    "engine_for_loop",
    "episode_item",
    "google_docstring",
    "json_schema",
    "listing",
    "opening",
    "openai_schema",
    "row_item",
    "opening_text",
]

OUTPUT_CHARS = 4000
"""Most characters of a command's stdout (and of its stderr) shown to the model per call: the
tail, where errors are."""


@dataclass(frozen=True)
class Param:
    """One argument of a tool (every argument is a string)."""

    name: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what it does (shown to the model), arguments and return value."""

    name: str
    description: str
    returns: str
    params: tuple[Param, ...] = ()

    @property
    def argument_names(self) -> list[str]:
        return [p.name for p in self.params]


_PATH = 'The file\'s path relative to the workspace root, for example "src/app.py".'

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "run_command",
        "Run a command line in the workspace (its root is the current directory).",
        "The exit code, then the command's stdout and stderr.",
        (Param("command", 'The command line, for example "python3 -m pytest -q" or "ls -la".'),),
    ),
    ToolSpec(
        "write_file",
        "Create or overwrite a text file in the workspace.",
        '"ok", or why the write was refused.',
        (Param("path", _PATH), Param("content", "The complete new text of the file.")),
    ),
    ToolSpec(
        "read_file",
        "Read a text file of the workspace.",
        "The file's text, or why it could not be read.",
        (Param("path", _PATH),),
    ),
    ToolSpec("list_files", "List the files of the workspace.", "One path per line."),
    ToolSpec(
        "submit",
        "Submit your work to be graded and get feedback; you may fix it and submit again.",
        "The grade and the grader's feedback.",
        (
            Param(
                "answer",
                "The final answer, for tasks that grade an answer. Workspace tasks grade the "
                "files in the workspace and ignore it.",
                required=False,
            ),
        ),
    ),
)
"""The episode's tools, in the order they are offered."""

_BY_NAME = {spec.name: spec for spec in TOOLS}
_NAMES = ", ".join(spec.name for spec in TOOLS)


def _spec(name: str) -> ToolSpec:
    spec = _BY_NAME.get(name)
    if spec is None:
        raise ToolRefused(f"unknown tool {name!r}; the tools are: {_NAMES}")
    return spec


# -- schemas ------------------------------------------------------------------------------


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments (an ``object`` of strings; no other keys)."""
    spec = _spec(name)
    return {
        "type": "object",
        "properties": {
            p.name: {"type": "string", "description": p.description} for p in spec.params
        },
        "required": [p.name for p in spec.params if p.required],
        "additionalProperties": False,
    }


def openai_schema(name: str) -> dict[str, Any]:
    """The OpenAI function-tool schema of a tool (what veRL's ``BaseTool`` carries)."""
    spec = _spec(name)
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": json_schema(name),
        },
    }


def google_docstring(name: str) -> str:
    """A tool's Google-style docstring (TRL renders the tool's schema from it)."""
    spec = _spec(name)
    lines = [spec.description, ""]
    if spec.params:
        lines.append("Args:")
        lines.extend(f"    {p.name}: {p.description}" for p in spec.params)
        lines.append("")
    lines.extend(["Returns:", f"    {spec.returns}"])
    return "\n".join(lines)


def args_model(name: str) -> type[BaseModel]:
    """A pydantic model of a tool's arguments (ORS builds its tool schema from one)."""
    spec = _spec(name)
    fields: dict[str, Any] = {
        p.name: (
            str,
            Field(description=p.description)
            if p.required
            else Field("", description=p.description),
        )
        for p in spec.params
    }
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        "".join(part.title() for part in name.split("_")) + "Args",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return model


# -- validation and dispatch --------------------------------------------------------------


def check_arguments(name: str, arguments: object) -> dict[str, str]:
    """A tool call's arguments, validated against the table (optional ones filled in).

    Raises:
        ToolRefused: an unknown tool, arguments that are not an object, an unknown or missing
            argument, or one that is not a string. The message names the tool and the
            argument and is meant for the model.
    """
    spec = _spec(name)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolRefused(
            f"{name}: the arguments must be an object, got {type(arguments).__name__}"
        )
    allowed = spec.argument_names
    unknown = sorted(str(key) for key in arguments if key not in allowed)
    if unknown:
        takes = ", ".join(allowed) if allowed else "none"
        raise ToolRefused(
            f"{name}: unknown argument {', '.join(map(repr, unknown))}; its arguments: {takes}"
        )
    out: dict[str, str] = {}
    for param in spec.params:
        value = arguments.get(param.name)
        if value is None:
            if param.required:
                raise ToolRefused(f"{name}: missing argument {param.name!r} (a string)")
            value = ""
        if not isinstance(value, str):
            raise ToolRefused(
                f"{name}: argument {param.name!r} must be a string, got {type(value).__name__}"
            )
        out[param.name] = value
    return out


@dataclass(frozen=True)
class ToolReply:
    """What a tool call gave back: the text for the model and, for ``submit``, the step."""

    text: str
    step: Step | None = None

    @property
    def reward(self) -> float:
        """The step reward for trainers that sum plain floats (0.0 unless a judged submit)."""
        return float(self.step.reward or 0.0) if self.step is not None else 0.0


def command_text(out: ExecResult) -> str:
    """A command's result as the model reads it: exit code, then the tails of both streams."""
    why = " (starved of CPU by machine load)" if out.starved else " (timed out)"
    head = f"exit code: {out.returncode}" + (why if out.timed_out else "")
    return (
        f"{head}\nstdout:\n{out.text()[-OUTPUT_CHARS:]}"
        f"\nstderr:\n{out.text('stderr')[-OUTPUT_CHARS:]}"
    )


def listing(files: list[str]) -> str:
    """The workspace's files, one per line (``(none)`` for an empty tree)."""
    return "\n".join(files) if files else "(none)"


def opening_text(files: list[str]) -> str:
    """What every API appends to the first observation: the workspace's files."""
    return f"Files in your workspace:\n{listing(files)}"


async def opening(episode: Episode) -> str:
    """:func:`opening_text` of the episode's tree (empty when it cannot be listed)."""
    try:
        files = await episode.list_files()
    except ToolRefused:
        files = []
    return opening_text(files)


def _submit_text(step: Step) -> str:
    more = "\nNo more attempts: the episode is over." if step.done else ""
    return f"{step.feedback}{more}"


async def _run(episode: Episode, args: dict[str, str]) -> ToolReply:
    line = args["command"]
    if episode.settings.allow_shell:
        return ToolReply(command_text(await episode.run(line)))
    # A task without a shell still takes a command line: split into words as a shell would
    # (quotes honoured; no pipes, redirections or variables: those stay literal words).
    # shlex.split only tokenises (linear, nothing runs).
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise ToolRefused(
            f"run_command: {exc} in the command line (this task runs commands without a "
            "shell: no pipes, redirections or variables)"
        ) from None
    return ToolReply(command_text(await episode.run(argv)))


async def _write(episode: Episode, args: dict[str, str]) -> ToolReply:
    await episode.write_file(args["path"], args["content"])
    return ToolReply("ok")


async def _read(episode: Episode, args: dict[str, str]) -> ToolReply:
    return ToolReply(await episode.read_file(args["path"]))


async def _list(episode: Episode, args: dict[str, str]) -> ToolReply:
    return ToolReply("\n".join(await episode.list_files()))


async def _submit(episode: Episode, args: dict[str, str]) -> ToolReply:
    step = await episode.submit(args["answer"] or None)
    return ToolReply(_submit_text(step), step)


_HANDLERS: dict[str, Callable[[Episode, dict[str, str]], Awaitable[ToolReply]]] = {
    "run_command": _run,
    "write_file": _write,
    "read_file": _read,
    "list_files": _list,
    "submit": _submit,
}
assert set(_HANDLERS) == set(_BY_NAME), "every tool of the table has a handler"


async def call_tool(episode: Episode, name: str, arguments: object) -> ToolReply:
    """Validate and run one tool call on ``episode``; never raises for the model's calls.

    A refusal (bad arguments, a path outside the tree, the episode over) is the reply's text.
    """
    try:
        args = check_arguments(name, arguments)
        return await _HANDLERS[name](episode, args)
    except ToolRefused as exc:
        return ToolReply(str(exc))


# -- what every API does around the tools -------------------------------------------------


def _json_field(value: Any, what: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise BadInput(f"{what} is not valid JSON: {exc}") from None
    return value


def episode_item(
    task: Any,
    *,
    episode: Any = None,
    ident: Any = None,
    prompt: Any = None,
    where: str = "the row",
) -> dict[str, Any]:
    """An episode item from what a trainer carries: the task and the episode settings, each a
    dict or JSON text. A task that holds its own ``"episode"`` key gives it up to the item.

    Raises:
        BadInput: the task is missing, not JSON or not an object, or the settings are not an
            object (``where`` names the place, e.g. ``"the row's 'task' column"``).
    """
    task = _json_field(task, f"{where}'s task")
    if not isinstance(task, dict):
        raise BadInput(f"{where} has no task (a dict or its JSON text), got {type(task).__name__}")
    task = dict(task)
    inner = task.pop("episode", None)
    settings = _json_field(episode, f"{where}'s episode settings")
    if settings is None:
        settings = inner
    item: dict[str, Any] = {"task": task, "completion": ""}
    if settings is not None:
        if not isinstance(settings, dict):
            raise BadInput(
                f"{where}'s episode settings must be an object, got {type(settings).__name__}"
            )
        item["episode"] = settings
    if ident is not None:
        item["id"] = str(ident)
    if isinstance(prompt, str):
        item["prompt"] = prompt
    return item


def row_item(row: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    """:func:`episode_item` of a task row (``task``, ``episode``, ``id``, ``prompt`` keys, as in
    datasets/workspace and a TRL dataset's columns)."""
    return episode_item(
        row.get("task"),
        episode=row.get("episode"),
        ident=row.get("id"),
        prompt=row.get("prompt"),
        where=where,
    )


def engine_for_loop(engines: dict[int, Engine], settings: EngineSettings | None) -> Engine:
    """One engine per running event loop in ``engines`` (trainers run their agents on their
    own loops; an engine's pool belongs to the loop that made it)."""
    from verifiers.engine import Engine, EngineSettings

    key = id(asyncio.get_running_loop())
    engine = engines.get(key)
    if engine is None:
        engine = Engine(settings or EngineSettings.from_env())
        engines[key] = engine
    return engine
