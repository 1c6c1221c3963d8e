"""The verifier protocol: a ``Spec`` model and ``async verify(trajectory, spec, ctx)``.

A verifier is a class. The engine builds one instance per engine, validates ``task.spec``
with the class's ``Spec`` model (``task.spec`` omitted means ``Spec()``; unknown keys are
``bad_input``, see :func:`parse_spec`), and awaits ``verify`` under the item's deadline.
Model failures are returned as ``Result.failed``/``Result.scored``, or raised from anywhere
inside ``verify`` as :class:`~verifiers.errors.InvalidOutput` ("the model's output caused
this": a ``fail`` with reward 0, also inside ``task.checks``). Problems the verifier cannot get
past are raised as any other :class:`~verifiers.errors.VerifierError` subclass (or any
exception) and become ``status="error"`` at the engine's one error boundary.

Example::

    from verifiers import Result, Spec, Verifier, register

    class ContainsSpec(Spec):
        needle: str

    @register("text.contains")
    class Contains(Verifier[ContainsSpec]):
        Spec = ContainsSpec

        async def verify(self, trajectory, spec, ctx):
            ok = spec.needle in completion_text(trajectory)
            return Result.scored(1.0 if ok else 0.0, feedback="" if ok else "needle missing")
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ._validation import model_error_lines
from .errors import BadInput
from .types import Result, Trajectory

if TYPE_CHECKING:
    from .context import VerifierContext

__all__ = ["InlineVerifier", "Spec", "Verifier", "parse_spec"]


class Spec(BaseModel):
    """Base of every verifier's settings model.

    Unknown keys are rejected (``bad_input`` naming the key and the closest valid one): a
    misspelt setting that silently keeps its default is the worst bug a reward can have.
    Forward compatibility goes through the reserved key ``version`` instead (see
    :func:`parse_spec`): a spec written for a newer verifier says so and gets a clear
    "upgrade" error rather than a guess.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


SpecT = TypeVar("SpecT", bound=Spec)


class Verifier(ABC, Generic[SpecT]):
    """Base class of all verifiers.

    Class attributes:
        name: Registry name, set by :func:`~verifiers.register`.
        version: Bumped when verdicts change; part of the cache key and of ``Result.verifier``.
        Spec: The pydantic model validating ``task.spec``.
        cacheable: Whether results may be served from the cache. Cheap verifiers set this to
            False: recomputing is faster than a cache lookup.
        uses_prompt: Whether the prompt affects the verdict (then it is part of the cache key).
        reference_required: When True a missing ``task.reference`` is ``bad_input``.
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    Spec: ClassVar[type[Spec]]
    cacheable: ClassVar[bool] = True
    uses_prompt: ClassVar[bool] = False
    reference_required: ClassVar[bool] = False

    @abstractmethod
    async def verify(self, trajectory: Trajectory, spec: SpecT, ctx: VerifierContext) -> Result:
        """Judge one trajectory.

        Args:
            trajectory: The rollout; ``trajectory.task.reference`` holds the ground truth.
            spec: ``task.spec`` validated by ``self.Spec``.
            ctx: Deadline, worker processes, sandboxes, artifacts, logger.

        Returns:
            A ``Result``; the engine fills in ``id``, ``verifier``, ``duration_s``.

        Raises:
            VerifierError: any subclass, turned into ``status="error"`` of its ``kind``.
        """

    def budget_s(self, spec: SpecT) -> float | None:
        """The most seconds ``verify`` may need for an item with this spec, or None.

        The time the verifier *promises the model* (a code test's ``timeout_s`` plus its
        start-up grace): the engine makes the item's deadline at least this long (plus a
        margin), so a model using its full allowance is judged (a fail when it is too slow)
        and is never cut off by the engine, which would be an ``error`` (an abstain the model
        could aim for). None: the engine's ``timeout_s`` alone applies.
        """
        return None

    def verify_inline(self, trajectory: Trajectory, spec: SpecT) -> Result | None:
        """Judge synchronously when that is cheap and needs no I/O, else return None.

        The engine calls this first, inline in its streaming loop (no task, no cache lookup,
        no deadline), and falls back to :meth:`verify` on None. Override it only for work
        bounded to about a millisecond (e.g. a formula over an inline table); anything that
        may parse a file, start a process or run long must return None here.
        """
        return None

    async def close(self) -> None:
        """Release resources held across items (warm workers, caches)."""


class InlineVerifier(Verifier[SpecT]):
    """A cheap, pure, CPU-only verifier (string/number comparison).

    Implement :meth:`check`; the engine calls it directly on the event loop without a task
    per item or a cache lookup, which is what makes 10^5 items/s possible. Anything that can
    take more than a millisecond or touches I/O must be a plain :class:`Verifier`.
    """

    cacheable: ClassVar[bool] = False

    @abstractmethod
    def check(self, trajectory: Trajectory, spec: SpecT) -> Result:
        """Judge synchronously; same contract as :meth:`Verifier.verify`."""

    def verify_inline(self, trajectory: Trajectory, spec: SpecT) -> Result | None:
        """:meth:`check`, in the engine's streaming loop."""
        return self.check(trajectory, spec)

    async def verify(self, trajectory: Trajectory, spec: SpecT, ctx: VerifierContext) -> Result:
        """:meth:`check`, for callers that go through the async protocol."""
        return self.check(trajectory, spec)


def _version_number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def parse_spec(cls: type[Verifier[Any]], raw: Mapping[str, Any] | None) -> Spec:
    """``task.spec`` validated by ``cls.Spec``; omitted means ``Spec()``.

    The key ``version`` is reserved (unless a spec declares a field of that name): the
    verifier version the spec was written for. A spec for a newer version than the one
    installed is refused with an upgrade hint; an older or equal one is read as usual.

    Raises:
        BadInput: an unknown key (naming the closest valid one), a bad value (naming the
            value and what is accepted), or a spec written for a newer verifier.
    """
    where = f"task.spec for {cls.name!r}"
    values: dict[str, Any] = dict(raw or {})
    if "version" in values and "version" not in cls.Spec.model_fields:
        wanted = _version_number(values.pop("version"))
        installed = _version_number(cls.version)
        if wanted is None or wanted < 1:
            raise BadInput(
                f"{where}: version must be a positive integer (the verifier version the spec "
                f"was written for), got {raw.get('version') if raw else None!r}"
            )
        if installed is not None and wanted > installed:
            raise BadInput(
                f"{where}: written for {cls.name}@{wanted}, but {cls.name}@{installed} is "
                "installed and may not know its settings",
                hint="upgrade verifiers (and the plugin that provides this verifier)",
            )
    try:
        return cls.Spec.model_validate(values)
    except ValidationError as exc:
        lines = model_error_lines(exc, cls.Spec, values, where="task.spec")
        shown = "; ".join(lines[:3]) + (
            f"; ... and {len(lines) - 3} more" if len(lines) > 3 else ""
        )
        raise BadInput(f"{where}: {shown}") from None


def spec_defaults(cls: type[Verifier[Any]]) -> Spec:
    """The spec used when ``task.spec`` is omitted."""
    return cls.Spec()
