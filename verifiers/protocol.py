"""The verifier protocol: a ``Spec`` model and ``async verify(trajectory, spec, ctx)``.

A verifier is a class. The engine builds one instance per engine, validates ``task.spec``
with the class's ``Spec`` model (``task.spec`` omitted means ``Spec()``), and awaits
``verify`` under the item's deadline. Model failures are returned as ``Result.failed``/
``Result.scored``; problems the verifier cannot get past are raised as a
:class:`~verifiers.errors.VerifierError` subclass (or any exception) and become
``status="error"`` at the engine's one error boundary.

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
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from .types import Result, Trajectory

if TYPE_CHECKING:
    from .context import VerifierContext

__all__ = ["InlineVerifier", "Spec", "Verifier"]


class Spec(BaseModel):
    """Base of every verifier's settings model. Unknown keys are kept, not rejected,
    so files written for a newer version still load."""

    model_config = ConfigDict(extra="allow", frozen=True)


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
        return self.check(trajectory, spec)

    async def verify(self, trajectory: Trajectory, spec: SpecT, ctx: VerifierContext) -> Result:
        return self.check(trajectory, spec)


def spec_defaults(cls: type[Verifier[Any]]) -> Spec:
    """The spec used when ``task.spec`` is omitted."""
    return cls.Spec()
