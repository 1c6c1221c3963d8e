"""Episodes: one live sandbox session for one rollout, with budgets, refine-on-feedback and a
final reward from the task's own verifier.

::

    async with Engine(EngineSettings(sandbox="local")) as engine:
        async with engine.episode(row) as ep:
            await ep.write_file("calc.py", "def add(a, b):\\n    return a + b\\n")
            out = await ep.run(["python3", "-c", "import calc; print(calc.add(1, 2))"])
            step = await ep.submit()          # workspace tasks: the tree is the answer
            result = await ep.finish()        # the episode's final Result

Why it is built this way (the threat model of docs/episodes.md):

* **The verdict never comes from the agent's sandbox.** ``submit`` turns what the agent did into
  a *completion* (the answer text, or for ``code.workspace`` the change set of its tree, read
  back as a tar stream by trusted code) and scores that completion with the engine, exactly as
  ``verifiers score`` would offline: a fresh sandbox, hidden tests copied in last. So the same
  trajectory gets the same reward live and on re-verification, and nothing the agent left
  running or planted takes part. Every attempt goes through the engine's one error boundary.
* **Budgets are the model's.** Turns, commands, CPU seconds, wall seconds and output bytes are
  counted per episode; each command's limits are clamped to what is left, and exhausting one
  ends the episode as the model's ``fail`` (reward 0 unless an earlier attempt earned more
  under the reward policy), with the budget named in the feedback.
* **A dead sandbox is never a score.** When the sandbox provider fails under the episode
  (an ``InfraError`` from the provider, the runner lost while the episode itself was reading
  the tree) the final result is ``error``/``infra``: an abstain. A runner lost *during the
  agent's own command* is that command's result, as in the sandbox layer (only the job can
  reach the runner mid-job), and ends the episode as the model's ``fail``: killing its own
  sandbox never turns a certain 0 into an abstain.
* **Feedback is safe to show.** Policy ``full`` shows the verifier's feedback as is (for tasks
  whose tests are public), ``public`` (the default) drops every line that quotes a hidden
  value (the verifier's ``hidden_values``: hidden test sources, names, expected outputs; for
  verifiers without one, every value of the reference and the spec), ``none`` shows only the
  score. The episode's own first line (score and components) is always shown.
* **Resubmitting costs nothing.** Attempts are cached by completion: the same answer returns
  the same step without running anything and without using an attempt.

Reward policies for the final result: ``last`` (the last attempt), ``best`` (the best attempt),
``discounted(g)`` (the last attempt's reward times ``g ** (attempts - 1)``). Any attempt that
could not be judged (``error``) makes the final result ``error`` unless an attempt already
earned full credit: an unjudged attempt might have been the best one.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import re
import threading
from collections.abc import Awaitable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._lifecycle import AsyncContext
from .errors import BadInput, InvalidOutput, VerifierError
from .types import Result, Status, Trajectory

if TYPE_CHECKING:
    from verifiers.sandbox import ExecResult, Sandbox

    from .engine import Engine, EngineSettings

__all__ = ["EpisodeSettings", "Episode", "Step", "SyncEpisode", "ToolRefused"]

T = TypeVar("T")

_LOST_MARK = b"[verifiers.sandbox] runner lost"


class ToolRefused(BadInput):
    """The agent asked for something its episode does not allow (a path outside the tree, a
    shell line where only argv is allowed, a tool call after the episode ended). The message
    is written for the model: trainer layers show ``str(exc)`` as the tool's output."""


class EpisodeSettings(BaseModel):
    """Budgets and policies of one episode; a task row may carry them as ``"episode": {...}``.

    Unknown keys are errors (a misspelt budget silently keeping its default is a bug).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    runtime: str | None = None
    """Sandbox runtime; default: the verifier spec's ``runtime`` if it has one, else
    ``python``."""
    max_turns: int = Field(default=64, ge=1)
    """Tool calls of any kind (run, write, read, list, submit)."""
    max_commands: int = Field(default=48, ge=0)
    """``run`` calls."""
    cpu_s: float = Field(default=120.0, gt=0)
    """CPU seconds over all commands."""
    wall_s: float = Field(default=300.0, gt=0)
    """Wall seconds over all commands."""
    output_bytes: int = Field(default=1 << 20, ge=1024)
    """stdout + stderr bytes returned to the agent over all commands."""
    command_timeout_s: float = Field(default=30.0, gt=0)
    """Default (and largest) timeout of one command."""
    memory_mb: int = Field(default=1024, ge=64)
    """Memory of the episode's sandbox."""
    allow_shell: bool = False
    """Whether ``run`` accepts a shell line (run as ``["sh", "-c", line]`` in the sandbox)."""
    max_attempts: int = Field(default=3, ge=1)
    """Submissions judged (a resubmitted identical answer does not count)."""
    reward: str = "last"
    """Final reward policy: ``last``, ``best`` or ``discounted(gamma)`` with 0 < gamma <= 1."""
    feedback: Literal["full", "public", "none"] = "public"
    """What of the verifier's feedback the agent sees (module docstring)."""

    @field_validator("reward")
    @classmethod
    def _policy(cls, value: str) -> str:
        if value in ("last", "best") or _discount(value) is not None:
            return value
        raise ValueError(f"reward policy {value!r}: use 'last', 'best' or 'discounted(0.9)'")


def _discount(policy: str) -> float | None:
    match = re.fullmatch(r"discounted\(\s*([0-9]*\.?[0-9]+)\s*\)", policy)
    if match is None:
        return None
    gamma = float(match.group(1))
    return gamma if 0 < gamma <= 1 else None


class Step(BaseModel):
    """What one ``submit`` gave back."""

    model_config = ConfigDict(frozen=True)

    reward: float | None
    """This attempt's reward (``None`` when it could not be judged)."""
    status: Status
    feedback: str
    """The verifier's feedback under the task's feedback policy."""
    components: dict[str, float] = Field(default_factory=dict)
    done: bool
    """No further attempt will be judged (full credit, attempts or budget used up, error)."""
    attempt: int
    """1-based number of the judged attempt this step reports."""
    cached: bool = False
    """The same answer was submitted before: nothing ran, no attempt was used."""


@runtime_checkable
class EpisodeVerifier(Protocol):
    """What a verifier whose answer is the sandbox's state (``code.workspace``) provides."""

    async def prepare_episode(self, sandbox: Sandbox, spec: Any, *, timeout: float) -> Any:
        """Lay out the task in the episode's sandbox; returns a baseline for the answer."""
        ...

    async def episode_answer(self, sandbox: Sandbox, spec: Any, baseline: Any) -> str:
        """The completion that the sandbox's current state stands for."""
        ...


class Episode(AsyncContext):
    """One rollout's live sandbox session. Made by :meth:`Engine.episode`; use ``async with``.

    Tool methods: :meth:`run`, :meth:`write_file`, :meth:`read_file`, :meth:`list_files`,
    :meth:`submit`; then :meth:`finish` for the final :class:`~verifiers.Result`.
    Model-caused refusals raise :class:`ToolRefused` (show its message to the model); ``run``
    never raises for the model's commands.
    """

    def __init__(
        self, engine: Engine, item: Trajectory | Mapping[str, Any], settings: EpisodeSettings
    ) -> None:
        self._engine = engine
        self.settings = settings
        self.trajectory = _trajectory(item)
        task = self.trajectory.task
        self._verifier, self._spec = engine.resolve(task)
        self.runtime = settings.runtime or str(getattr(self._spec, "runtime", "python"))
        self._session: AbstractAsyncContextManager[Sandbox] | None = None
        self._sandbox: Sandbox | None = None
        self._baseline: Any = None
        self._hidden = _hidden_values(self._verifier, self._spec, task.reference)
        self._cache: dict[str, Step] = {}
        self._results: list[Result] = []
        self.turns = 0
        self.commands = 0
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.output_bytes = 0
        self.exhausted: str | None = None
        """Which budget ran out, if one did."""
        self.lost: str | None = None
        """Why the sandbox was lost under the episode (then the result is an abstain)."""
        self.killed: str | None = None
        """Why the agent's own command took the sandbox down (then the result is a fail)."""
        self._final: Result | None = None

    # -- lifecycle -----------------------------------------------------------------------

    async def _enter(self) -> None:
        await self.start()

    async def _exit(self) -> None:
        await self.close()

    async def start(self) -> None:
        """Open the sandbox and lay out the task (for workspace tasks: tree and setup).

        A provider that cannot start is not raised: the episode is ``lost`` and its result an
        abstain (``error``/``infra``). A broken task (bad spec, failing setup) raises
        ``BadInput``.
        """
        try:
            self._session = self._engine.episode_sandboxes.session(
                self.runtime,
                timeout_s=self.settings.command_timeout_s,
                memory_mb=self.settings.memory_mb,
            )
            self._sandbox = await self._session.__aenter__()
            if isinstance(self._verifier, EpisodeVerifier):
                self._baseline = await self._verifier.prepare_episode(
                    self._sandbox, self._spec, timeout=self.settings.wall_s
                )
        except BadInput:
            await self.close()
            raise
        except VerifierError as exc:
            self.lost = f"the sandbox could not start: {exc}"

    async def close(self) -> None:
        """Release the sandbox (idempotent; :meth:`finish` calls it)."""
        session, self._session, self._sandbox = self._session, None, None
        if session is not None:
            try:
                await session.__aexit__(None, None, None)
            except VerifierError:
                pass  # the sandbox is gone already: nothing of ours is left to release

    @property
    def attempts(self) -> tuple[Result, ...]:
        """The results of the judged attempts so far, in order."""
        return tuple(self._results)

    @property
    def done(self) -> bool:
        """No further tool call will run."""
        return bool(
            self._final is not None or self.exhausted or self.lost or self.killed or self._over()
        )

    def _over(self) -> bool:
        judged = [r for r in self._results]
        return bool(judged) and (
            len(judged) >= self.settings.max_attempts or judged[-1].status in ("pass", "error")
        )

    # -- tools ---------------------------------------------------------------------------

    def _turn(self, what: str) -> None:
        if self.done:
            raise ToolRefused(f"{what} refused: the episode is over ({self._why_over()})")
        self.turns += 1
        if self.turns > self.settings.max_turns:
            self.exhausted = f"turns ({self.settings.max_turns})"
            raise ToolRefused(f"{what} refused: the episode is over ({self._why_over()})")

    def _why_over(self) -> str:
        if self.lost:
            return self.lost
        if self.killed:
            return self.killed
        if self.exhausted:
            return f"budget exhausted: {self.exhausted}"
        if self._final is not None:
            return "finished"
        return "no attempts left" if self._results else "over"

    async def run(self, command: list[str] | str, *, timeout: float | None = None) -> ExecResult:
        """Run a command in the sandbox's work dir (argv; a shell line if the task allows it).

        Never raises for the model's commands: a refused, killed or budget-ending command is an
        ``ExecResult`` whose stderr says why (returncode 126 for a refusal).
        """
        from verifiers.sandbox import ExecResult, Limits

        def refused(message: str) -> ExecResult:
            return ExecResult(returncode=126, stderr=f"[episode] {message}\n".encode())

        try:
            self._turn("run")
        except ToolRefused as exc:
            return refused(str(exc))
        argv: list[str]
        if isinstance(command, str):
            if not self.settings.allow_shell:
                return refused("this task runs argv lists only, not shell lines")
            argv = ["sh", "-c", command]
        elif not command or not all(isinstance(a, str) and "\x00" not in a for a in command):
            return refused("a command is a non-empty list of strings")
        else:
            argv = list(command)
        self.commands += 1
        if self.commands > self.settings.max_commands:
            self.exhausted = f"commands ({self.settings.max_commands})"
            return refused(f"budget exhausted: {self.exhausted}")
        wall_left = self.settings.wall_s - self.wall_s
        cpu_left = self.settings.cpu_s - self.cpu_s
        out_left = self.settings.output_bytes - self.output_bytes
        wanted = self.settings.command_timeout_s if timeout is None else float(timeout)
        budget = max(0.05, min(wanted, self.settings.command_timeout_s, wall_left))
        wall_binds = wall_left <= min(wanted, self.settings.command_timeout_s)
        cpu_binds = cpu_left <= budget + 1
        limits = Limits(
            timeout_s=budget,
            memory_mb=self.settings.memory_mb,
            cpu_s=max(0.05, min(cpu_left, budget + 1)),
            output_bytes=max(1, out_left),
        )
        sandbox = self._sandbox
        if sandbox is None:
            return refused(self.lost or "the sandbox is not open")
        try:
            result = await sandbox.exec(argv, timeout=budget, limits=limits)
        except ToolRefused:
            raise
        except BadInput as exc:
            return refused(str(exc))
        except VerifierError as exc:
            self.lost = f"the sandbox was lost: {exc}"
            return refused(self.lost + "; the episode ends without a score")
        self.wall_s += result.duration_s
        self.cpu_s += result.cpu_s
        self.output_bytes += len(result.stdout) + len(result.stderr)
        if result.starved:
            # The machine, not the model, ran the command out of wall time (see
            # docs/sandbox.md): the budgets no longer say anything; no score.
            self.lost = "a command was starved of CPU by machine load; the episode ends unjudged"
        elif result.returncode == -9 and _LOST_MARK in result.stderr:
            self.killed = "the last command took the sandbox down"
        elif self.wall_s >= self.settings.wall_s or (wall_binds and result.timed_out):
            self.exhausted = f"wall seconds ({self.settings.wall_s:g})"
        elif self.cpu_s >= self.settings.cpu_s or (
            # RLIMIT_CPU kills by signal a little before the limit is reported as used
            cpu_binds and result.returncode < 0 and not result.timed_out
        ):
            self.exhausted = f"CPU seconds ({self.settings.cpu_s:g})"
        elif self.output_bytes >= self.settings.output_bytes:
            self.exhausted = f"output bytes ({self.settings.output_bytes})"
        return result

    async def write_file(self, path: str, text: str) -> None:
        """Write a text file in the work dir (relative path, inside the tree).

        Raises:
            ToolRefused: a bad path, or the episode is over.
        """
        self._turn("write_file")
        if not isinstance(text, str):
            raise ToolRefused("write_file needs text content")
        if len(text.encode("utf-8", "surrogatepass")) > self.settings.output_bytes * 16:
            raise ToolRefused("write_file: the file is too large")
        clean = _tool_path(path)
        await self._provider_call(self._open().write_files({clean: text}))
        # Writes are queued until the next request: send it now so a bad write fails here.
        await self._provider_call(self._open().exec(["true"]))

    async def read_file(self, path: str, *, max_bytes: int = 1 << 20) -> str:
        """A file of the work dir as text (UTF-8, invalid bytes replaced).

        Raises:
            ToolRefused: a bad or missing path, a file too large, or the episode is over.
        """
        self._turn("read_file")
        clean = _tool_path(path)
        try:
            data = await self._provider_call(self._open().read_file(clean, max_bytes=max_bytes))
        except FileNotFoundError:
            raise ToolRefused(f"read_file: no such file {path!r}") from None
        return data.decode("utf-8", "replace")

    async def list_files(self) -> list[str]:
        """Paths of the work dir's files (what ``find`` lists, sorted).

        Raises:
            ToolRefused: the episode is over.
        """
        self._turn("list_files")
        res = await self._provider_call(
            self._open().exec(
                ["find", ".", "-mindepth", "1", "-not", "-path", "./.tmp*", "-print0"]
            )
        )
        return sorted(p[2:] for p in res.stdout.decode("utf-8", "replace").split("\0") if p)

    def _open(self) -> Sandbox:
        if self._sandbox is None:
            raise ToolRefused(f"the sandbox is not open ({self.lost or 'closed'})")
        return self._sandbox

    async def _provider_call(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except (ToolRefused, FileNotFoundError):
            raise
        except BadInput as exc:
            raise ToolRefused(str(exc)) from None
        except VerifierError as exc:
            self.lost = f"the sandbox was lost: {exc}"
            raise ToolRefused(self.lost + "; the episode ends without a score") from None

    # -- attempts ------------------------------------------------------------------------

    async def submit(self, answer: str | None = None) -> Step:
        """Judge an answer (for workspace tasks: the sandbox's tree; ``answer`` is ignored).

        Returns:
            The attempt's :class:`Step`. After the episode is over it reports the last step
            again with ``done=True`` (no new attempt).
        """
        if self.done:
            return self._over_step()
        self._turn("submit")
        if isinstance(self._verifier, EpisodeVerifier):
            if self._sandbox is None:
                self.lost = self.lost or "the sandbox is not open"
                return self._over_step()
            try:
                completion = await self._verifier.episode_answer(
                    self._sandbox, self._spec, self._baseline
                )
            except InvalidOutput as exc:
                return self._record(completion=None, result=Result.failed(str(exc)))
            except VerifierError as exc:
                self.lost = f"the sandbox was lost while reading the tree: {exc}"
                return self._record(completion=None, result=Result.errored("infra", self.lost))
        elif answer is None or not isinstance(answer, str):
            return self._record(completion=None, result=Result.failed("submit needs an answer"))
        else:
            completion = answer
        known = self._cache.get(completion)
        if known is not None:
            return known.model_copy(update={"cached": True, "done": self.done})
        result = await self._engine.score_one(
            self.trajectory.model_copy(update={"completion": completion})
        )
        return self._record(completion=completion, result=result)

    def _record(self, *, completion: str | None, result: Result) -> Step:
        self._results.append(result)
        step = Step(
            reward=result.reward,
            status=result.status,
            feedback=self._feedback(result),
            components=dict(result.components),
            done=self.done,
            attempt=len(self._results),
        )
        if completion is not None:
            self._cache[completion] = step
        return step

    def _over_step(self) -> Step:
        last = self._results[-1] if self._results else None
        note = f"The episode is over ({self._why_over()})."
        return Step(
            reward=None if last is None else last.reward,
            status="fail" if last is None else last.status,
            feedback=note,
            components={} if last is None else dict(last.components),
            done=True,
            attempt=len(self._results),
        )

    def _feedback(self, result: Result) -> str:
        if result.status == "error":
            return "This attempt could not be judged (a verifier or machine fault, not yours)."
        head = f"Score {result.reward:.3f} ({result.status})" if result.reward is not None else ""
        if result.components:
            head += ": " + ", ".join(f"{k}={v:.3f}" for k, v in sorted(result.components.items()))
        policy = self.settings.feedback
        if policy == "none" or not result.feedback:
            return head
        if policy == "full":
            return f"{head}\n{result.feedback}"
        kept, withheld = _scrub(result.feedback, self._hidden)
        if withheld:
            kept.append(f"({withheld} line(s) withheld: they quote hidden tests or references)")
        return "\n".join([head, *kept])

    # -- final ---------------------------------------------------------------------------

    async def finish(self) -> Result:
        """The episode's final result (idempotent); closes the sandbox.

        A workspace episode that never submitted is judged on its final tree first.
        """
        if self._final is not None:
            return self._final
        if (
            not self._results
            and not (self.exhausted or self.lost or self.killed)
            and isinstance(self._verifier, EpisodeVerifier)
        ):
            self.turns -= 1  # the implicit submit is not the agent's turn
            await self.submit()
        await self.close()
        self._final = self._final_result()
        return self._final

    def result_so_far(self) -> Result:
        """What :meth:`finish` would give now, without finishing (the sandbox stays open).

        For trainers whose rollout may stop at any call (veRL's agent loop): the result of the
        episode as it stands after the last judged attempt.
        """
        return self._final if self._final is not None else self._final_result()

    def _final_result(self) -> Result:
        details: dict[str, Any] = {
            "episode": {
                "attempts": [r.reward for r in self._results],
                "turns": self.turns,
                "commands": self.commands,
                "cpu_s": round(self.cpu_s, 4),
                "wall_s": round(self.wall_s, 4),
                "output_bytes": self.output_bytes,
                "exhausted": self.exhausted,
                "reward_policy": self.settings.reward,
            }
        }
        base = {"id": self.trajectory.id, "verifier": self._verifier_label()}
        if self.lost:
            return Result.errored("infra", self.lost, details=details).model_copy(update=base)
        judged = self._results
        if any(r.status == "error" for r in judged) and not any(r.status == "pass" for r in judged):
            first = next(r for r in judged if r.status == "error")
            message = first.error.message if first.error is not None else "attempt not judged"
            kind = first.error.kind if first.error is not None else "verifier"
            return Result.errored(kind, message, details=details).model_copy(update=base)
        if self.killed and not judged:
            return Result.failed(self.killed, details=details).model_copy(update=base)
        if not judged:
            why = f"budget exhausted: {self.exhausted}" if self.exhausted else "no answer submitted"
            return Result.failed(f"The episode ended with {why}.", details=details).model_copy(
                update=base
            )
        chosen, reward = self._chosen(judged)
        feedback = chosen.feedback
        if self.exhausted:
            feedback = f"Budget exhausted: {self.exhausted}.\n{feedback}"
        status: Status = "pass" if reward >= 1.0 - 1e-12 else "fail"
        return Result(
            reward=reward,
            status=status,
            components=dict(chosen.components),
            feedback=feedback,
            details={**chosen.details, **details},
            **base,
        )

    def _chosen(self, judged: list[Result]) -> tuple[Result, float]:
        policy = self.settings.reward
        if policy == "best":
            best = max(judged, key=lambda r: r.reward or 0.0)
            return best, float(best.reward or 0.0)
        last = judged[-1]
        gamma = _discount(policy)
        factor = 1.0 if gamma is None else gamma ** (len(judged) - 1)
        return last, float(last.reward or 0.0) * factor

    def _verifier_label(self) -> str:
        return f"{self._verifier.name}@{self._verifier.version}"


# -- helpers -----------------------------------------------------------------------------------


def _trajectory(item: Trajectory | Mapping[str, Any]) -> Trajectory:
    """The item as a trajectory through the engine's one validation path
    (:func:`verifiers.io.trajectory_from`): a bad item is worded as a file line's would be."""
    from .io import trajectory_from

    if isinstance(item, Mapping):
        data = {k: v for k, v in item.items() if k != "episode"}
        data.setdefault("completion", "")
        return trajectory_from(data)
    return trajectory_from(item)


def settings_for(
    item: Trajectory | Mapping[str, Any], overrides: Mapping[str, Any]
) -> EpisodeSettings:
    """The item's ``episode`` settings with ``overrides`` on top.

    Raises:
        BadInput: an unknown key or a value out of range (the message names it).
    """
    raw: dict[str, Any] = {}
    if isinstance(item, Mapping) and isinstance(item.get("episode"), Mapping):
        raw.update(item["episode"])
    raw.update(overrides)
    try:
        return EpisodeSettings.model_validate(raw)
    except ValidationError as exc:
        from .engine import validation_message

        raise BadInput(f"episode settings: {validation_message(exc)}") from None


def _tool_path(path: str) -> str:
    if not isinstance(path, str) or not path or "\x00" in path or path.startswith("/"):
        raise ToolRefused(f"bad path {path!r}: use a relative path inside the work dir")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ToolRefused(f"bad path {path!r}: it leaves the work dir")
    return "/".join(parts)


def _hidden_values(verifier: Any, spec: Any, reference: Any) -> list[str]:
    hook = getattr(verifier, "hidden_values", None)
    if callable(hook):
        values = list(hook(spec, reference))
    else:
        values = list(_leaves(reference)) + list(_leaves(spec.model_dump(mode="json")))
    out = []
    for value in values:
        text = str(value).strip()
        if not text:
            continue
        out.append(text)
        if "\n" in text:
            out.extend(line.strip() for line in text.splitlines() if len(line.strip()) >= 4)
    return sorted(set(out), key=len, reverse=True)


def _leaves(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if value is None or isinstance(value, bool):
        return []
    return [json.dumps(value) if not isinstance(value, str) else value]


_NUMERIC = re.compile(r"^-?\d+(\.\d+)?$")


def _scrub(feedback: str, hidden: list[str]) -> tuple[list[str], int]:
    """Lines of ``feedback`` that quote no hidden value, and how many were dropped.

    Values of three or more characters match anywhere; shorter ones and numbers match as
    whole tokens (so a hidden ``4`` drops ``expected 4`` but not ``14 tests``).
    """
    long = [h for h in hidden if len(h) >= 3 and not _NUMERIC.match(h)]
    short = [h for h in hidden if len(h) < 3 or _NUMERIC.match(h)]
    token = (
        re.compile("|".join(rf"(?<![\w.]){re.escape(h)}(?![\w.])" for h in short))
        if short
        else None
    )
    kept: list[str] = []
    dropped = 0
    for line in feedback.splitlines():
        if any(h in line for h in long) or (token is not None and token.search(line)):
            dropped += 1
        else:
            kept.append(line)
    return kept, dropped


# -- sync twin ---------------------------------------------------------------------------------


class _Background:
    """One event loop in a daemon thread hosting one engine per engine settings, shared by every
    :class:`SyncEpisode` of the process (so TRL's many environments share one sandbox pool)."""

    _lock = threading.Lock()
    _instance: _Background | None = None

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="verifiers-episodes", daemon=True
        )
        self.thread.start()
        self.engines: dict[str, Engine] = {}
        atexit.register(self.shutdown)

    @classmethod
    def get(cls) -> _Background:
        with cls._lock:
            if cls._instance is None:
                cls._instance = _Background()
            return cls._instance

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError(
                "SyncEpisode cannot be used inside a running event loop; use Episode"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def engine(self, settings: EngineSettings) -> Engine:
        from .engine import Engine

        key = settings.model_dump_json()
        with self._lock:
            engine = self.engines.get(key)
            if engine is None:
                engine = Engine(settings)
                self.engines[key] = engine
            return engine

    def shutdown(self) -> None:
        async def close_all() -> None:
            for engine in list(self.engines.values()):
                await engine.aclose()
            self.engines.clear()

        if self.thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(close_all(), self.loop).result(30)
            except Exception:  # at exit: the sandboxes' own reapers clean up what is left
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)


class SyncEpisode:
    """Synchronous twin of :class:`Episode` for scripts and trainers' sync tool calls.

    ``with SyncEpisode(row, engine=EngineSettings(sandbox="local")) as ep: ep.run([...])``.
    Runs on one shared background event loop; refuses to run inside a running loop.
    """

    def __init__(
        self,
        item: Trajectory | Mapping[str, Any],
        *,
        engine: EngineSettings | None = None,
        **settings: Any,
    ) -> None:
        from .engine import EngineSettings

        self._bg = _Background.get()
        eng = self._bg.engine(engine or EngineSettings.from_env())
        self._episode = eng.episode(item, **settings)

    @property
    def episode(self) -> Episode:
        """The async episode underneath."""
        return self._episode

    def __enter__(self) -> Self:
        self._bg.call(self._episode.start())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bg.call(self._episode.close())

    @property
    def done(self) -> bool:
        return self._episode.done

    def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine over :attr:`episode` on the shared loop and wait for it (how the
        trainers' sync layers call the shared tool dispatch)."""
        return self._bg.call(coro)

    def run(self, command: list[str] | str, *, timeout: float | None = None) -> ExecResult:
        return self._bg.call(self._episode.run(command, timeout=timeout))

    def write_file(self, path: str, text: str) -> None:
        self._bg.call(self._episode.write_file(path, text))

    def read_file(self, path: str, *, max_bytes: int = 1 << 20) -> str:
        return self._bg.call(self._episode.read_file(path, max_bytes=max_bytes))

    def list_files(self) -> list[str]:
        return self._bg.call(self._episode.list_files())

    def submit(self, answer: str | None = None) -> Step:
        return self._bg.call(self._episode.submit(answer))

    def finish(self) -> Result:
        return self._bg.call(self._episode.finish())
