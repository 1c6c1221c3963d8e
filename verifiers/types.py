"""The data contract: trajectories in, results out (see docs/format.md).

These models are the stable public API. Field docs are attribute docstrings so that the JSON
Schemas in ``docs/schema/`` (``python -m verifiers.schema``) carry them.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "Artifact",
    "Check",
    "ErrorInfo",
    "ErrorKind",
    "Message",
    "Result",
    "Status",
    "Task",
    "Trajectory",
    "json_safe",
]

Status = Literal["pass", "fail", "error", "skipped"]
"""``pass``: full credit; ``fail``: less than full credit; ``error``: could not judge;
``skipped``: the task does not apply (abstain)."""

ErrorKind = Literal["bad_input", "infra", "timeout", "verifier"]


def _safe_text(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate ("\ud800" decoded from the model's JSON) cannot be UTF-8: write
        # it as the escape a reader would have typed, so nothing is lost and the line parses.
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_JSON_SCALARS = (bool, int, float, type(None))


def json_safe(value: Any) -> Any:
    r"""``value`` made writable as UTF-8 JSON: the one function every result boundary uses.

    Verifiers copy text from model output into ``feedback`` and ``details``; model output may
    hold what JSON cannot carry as UTF-8 (a lone surrogate from ``json.loads`` of the model's
    ``"\ud800"``) or a verifier may leave a non-JSON object behind. Either would make the
    whole output line (or a whole HTTP batch) fail to serialise, so the writers (CLI file,
    cache, reward server) pass results through here: unpaired surrogates become their
    ``\uXXXX`` escape as text, dict keys become strings, tuples and sets lists, and any
    other object its ``str``. Returns ``value`` itself (no copy) when nothing needed fixing,
    so the common case costs one walk and no allocation. Linear in the size of ``value``.
    """
    if isinstance(value, str):
        return _safe_text(value)
    if isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            safe_key = _safe_text(key) if isinstance(key, str) else _safe_text(str(key))
            safe_item = json_safe(item)
            changed = changed or safe_key is not key or safe_item is not item
            out[safe_key] = safe_item
        return out if changed else value
    if isinstance(value, list):
        items = [json_safe(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    if isinstance(value, tuple | set | frozenset):
        return [json_safe(item) for item in value]
    if isinstance(value, BaseModel):
        return json_safe(value.model_dump(mode="python"))
    return _safe_text(str(value))


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(extra="allow", frozen=True)

    role: str
    """``system``, ``user``, ``assistant``, ``tool`` ..."""
    content: str | list[Any] | None = None
    """Text, or a list of content parts (only their ``text`` parts are read)."""


class Artifact(BaseModel):
    """A file the agent produced: a path relative to the input file, or inline base64."""

    model_config = ConfigDict(extra="allow", frozen=True)

    path: str | None = None
    """Path of the file, relative to the directory of the input file."""
    base64: str | None = None
    """The file's bytes, base64-encoded (standard alphabet)."""
    name: str | None = None
    """Original file name; its suffix tells the format when ``base64`` is used."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.path is None) == (self.base64 is None):
            raise ValueError("an artifact needs exactly one of 'path' or 'base64'")
        return self


class Check(BaseModel):
    """One verifier inside a composed task (``task.checks``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verifier: str
    """Registry name, e.g. ``"code.tests"``."""
    spec: dict[str, Any] | None = None
    """Settings for that verifier, validated by its ``Spec`` model. Omit for defaults."""
    reference: Any = None
    """Ground truth for this check; falls back to ``task.reference``."""
    weight: float = Field(default=1.0, ge=0.0)
    """Weight in the weighted mean."""
    required: bool = False
    """A gate: when this check does not pass, the whole reward is 0."""
    name: str | None = None
    """Component name in the result; defaults to the verifier name."""


class Task(BaseModel):
    """What to check: one verifier, or several combined (``checks``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verifier: str | None = None
    """Registry name of the verifier (exclusive with ``checks``)."""
    spec: dict[str, Any] | None = None
    """That verifier's settings; omit to use its defaults."""
    reference: Any = None
    """Ground truth, where there is one."""
    checks: list[Check] | None = None
    """Several verifiers combined into one reward."""
    combine: Literal["mean", "min", "all"] = "mean"
    """How ``checks`` combine: weighted mean, minimum, or all-must-pass (else 0)."""

    @model_validator(mode="after")
    def _verifier_or_checks(self) -> Self:
        if (self.verifier is None) == (not self.checks):
            raise ValueError("task needs exactly one of 'verifier' or a non-empty 'checks'")
        return self


class Trajectory(BaseModel):
    """One rollout to score: one line of a trajectory file."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str | int | None = None
    """Caller's identifier, echoed on the result (``--resume`` keys on it)."""
    prompt: str | list[Message] | None = None
    """The prompt: plain text or chat messages."""
    completion: str | list[Message]
    """The model's output: plain text or chat messages."""
    task: Task
    """What to check."""
    artifacts: dict[str, Artifact] = Field(default_factory=dict)
    """Files the agent produced, by name."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form; echoed nowhere, available to verifiers."""

    @field_validator("id")
    @classmethod
    def _id_is_text(cls, value: str | int | None) -> str | None:
        return None if value is None else str(value)


class ErrorInfo(BaseModel):
    """Why a verifier could not judge."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ErrorKind
    """``bad_input``, ``infra``, ``timeout`` or ``verifier``."""
    message: str
    """One line a person (or a model) can act on."""
    line: int | None = None
    """1-based line number in the input file, for input problems."""
    attempts: int = 1
    """How many times the verifier was tried (infra errors are retried)."""


class Result(BaseModel):
    """The verdict on one trajectory: one line of a scored file.

    Invariants (validated): ``pass``/``fail`` carry a finite reward and no error;
    ``error`` carries ``error`` and no reward; ``skipped`` carries no reward.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    """The trajectory's id."""
    reward: float | None
    """The scalar reward; ``None`` when the verifier could not judge or abstained."""
    status: Status
    """``pass``, ``fail``, ``error`` or ``skipped``."""
    components: dict[str, float] = Field(default_factory=dict)
    """Named partial scores in [0, 1], for trainer logs."""
    feedback: str = ""
    """Text that can be shown to the model on its next try."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Verifier-specific diagnostics (JSON-serialisable)."""
    error: ErrorInfo | None = None
    """Set when ``status == "error"``."""
    verifier: str = ""
    """``name@version`` of the verifier that produced this result."""
    duration_s: float = 0.0
    """Wall time spent producing this result."""
    cached: bool = False
    """True when served from the cache."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.status in ("pass", "fail"):
            if self.reward is None or not math.isfinite(self.reward):
                raise ValueError(f"status {self.status!r} needs a finite reward")
            if self.error is not None:
                raise ValueError(f"status {self.status!r} cannot carry an error")
        elif self.reward is not None:
            raise ValueError(f"status {self.status!r} must have reward null")
        if (self.status == "error") != (self.error is not None):
            raise ValueError("'error' is set exactly when status is 'error'")
        return self

    def json_safe(self) -> Result:
        """This result with every string and detail writable as UTF-8 JSON.

        See :func:`json_safe`; ``self`` when nothing needed fixing.
        """
        update: dict[str, Any] = {}
        for field in ("id", "feedback", "verifier"):
            value = getattr(self, field)
            if isinstance(value, str):
                safe = _safe_text(value)
                if safe is not value:
                    update[field] = safe
        details = json_safe(self.details)
        if details is not self.details:
            update["details"] = details
        components = {_safe_text(k): v for k, v in self.components.items()}
        if any(a is not b for a, b in zip(components, self.components, strict=True)):
            update["components"] = components
        if self.error is not None:
            message = _safe_text(self.error.message)
            if message is not self.error.message:
                update["error"] = self.error.model_copy(update={"message": message})
        return self.model_copy(update=update) if update else self

    # -- constructors verifiers use ------------------------------------------------------

    @classmethod
    def scored(
        cls,
        reward: float,
        *,
        components: dict[str, float] | None = None,
        feedback: str = "",
        details: dict[str, Any] | None = None,
        max_reward: float = 1.0,
    ) -> Result:
        """A verdict: ``pass`` when ``reward >= max_reward``, else ``fail``.

        Example:
            >>> Result.scored(0.5).status, Result.scored(1.0).status
            ('fail', 'pass')
        """
        status: Status = "pass" if reward >= max_reward - 1e-12 else "fail"
        return cls._judged(status, reward, components, feedback, details)

    @classmethod
    def failed(
        cls,
        feedback: str,
        *,
        reward: float = 0.0,
        components: dict[str, float] | None = None,
        details: dict[str, Any] | None = None,
    ) -> Result:
        """A model failure with the given (default 0) reward."""
        return cls._judged("fail", reward, components, feedback, details)

    @classmethod
    def _judged(
        cls,
        status: Status,
        reward: float,
        components: dict[str, float] | None,
        feedback: str,
        details: dict[str, Any] | None,
    ) -> Result:
        """The one construction of a verdict (``scored`` and ``failed`` choose its status)."""
        return cls(
            reward=float(reward),
            status=status,
            components=components or {},
            feedback=feedback,
            details=details or {},
        )

    @classmethod
    def errored(
        cls,
        kind: ErrorKind,
        message: str,
        *,
        line: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> Result:
        """The verifier could not judge: reward ``None``."""
        return cls(
            reward=None,
            status="error",
            error=ErrorInfo(kind=kind, message=message, line=line),
            feedback="",
            details=details or {},
        )

    @classmethod
    def skipped(cls, reason: str) -> Result:
        """The task does not apply to this output: abstain (``status="skipped"``).

        Named like the other constructors after the status it makes (``scored``,
        ``failed``, ``errored``).
        """
        return cls(reward=None, status="skipped", feedback=reason)

    @classmethod
    def skip(cls, reason: str) -> Result:
        """Same as :meth:`skipped` (the earlier name, kept working)."""
        return cls.skipped(reason)
