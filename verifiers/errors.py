"""The one exception tree of ``verifiers``.

Every exception the library raises on purpose derives from :class:`VerifierError`.
The engine turns these into ``status="error"`` results at exactly one place (its error
boundary); the ``kind`` attribute decides which :data:`~verifiers.types.ErrorKind` the
result carries::

    VerifierError                 kind="verifier"  a bug or unexpected state in a verifier
    ├── BadInput                  kind="bad_input" the trajectory / spec / artifact is unusable
    │   ├── UnknownVerifier       kind="bad_input" no verifier registered under that name
    │   ├── InvalidSettings       kind="bad_input" engine settings out of range (also a ValueError)
    │   └── ResourceExhausted     kind="bad_input" judging the input needs more memory than allowed
    ├── InfraError                kind="infra"     something outside the verifier broke
    │   ├── SandboxUnavailable    kind="infra"     no sandbox provider could be reached
    │   └── RunAborted            kind="infra"     stopped: the same non-retryable infra error
    │                                              N times in a row (raised by Engine.stream)
    ├── VerifierTimeout           kind="timeout"   the per-item deadline passed
    ├── MissingDependency         kind="infra"     an optional extra is not installed
    └── InvalidOutput             (no error)       the model's output broke the check: a ``fail``

Only ``InfraError`` (and its subclasses) is retried by the engine, and only while
``retryable`` is true. ``retryable`` is decided where the error is raised, by the code that
knows the cause: a container that failed to start may start next time (retryable, the class
default of ``InfraError``); no Docker engine, an image or runtime that is not built, a missing
extra, ``--sandbox none`` cannot succeed on a retry (``retryable=False``, and always for
``MissingDependency``). The engine records a non-retryable infra error on the result
(``details["infra"]``) and, when ``EngineSettings.fail_fast_after`` is set, stops the run after
that many identical ones in a row with :class:`RunAborted` (the CLI's default is 10).

``InvalidOutput`` is how any verifier says "the model's text caused this": a parse failure, an
overflow, a sympy ``TypeError`` on a formula the model wrote. The engine's error boundary turns
it into ``status="fail"``, reward 0, its message as feedback, never into an ``error`` (an
abstain the model could aim for). It crosses worker processes (``kind="output"``) and holds
inside ``task.checks`` too: a check that raised it is a failed check, so it gates a
``required`` check and counts as 0 under ``combine="min"``/``"mean"``. Nothing here derives from
``BaseException``; timeouts are enforced by killing processes, never by alarm signals.

A *model* failure (wrong answer, crashing candidate code) is never an exception: it is a
``Result`` with ``status="fail"``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import ClassVar

__all__ = [
    "BadInput",
    "InfraError",
    "InvalidOutput",
    "InvalidSettings",
    "MissingDependency",
    "ResourceExhausted",
    "RunAborted",
    "SandboxUnavailable",
    "UnknownVerifier",
    "VerifierError",
    "VerifierTimeout",
]


class VerifierError(Exception):
    """Root of every exception raised by ``verifiers``.

    Attributes:
        kind: The ``ErrorInfo.kind`` an engine records when this escapes a verifier.
        hint: An optional one-line fix a user can act on (printed by the CLI).
        retryable: Whether trying the same item again can succeed. A class default (true for
            :class:`InfraError`, false elsewhere), overridden where the error is raised by
            the code that knows the cause (``SandboxUnavailable(..., retryable=False)``).
    """

    kind: ClassVar[str] = "verifier"
    retryable: bool = False

    def __init__(
        self, message: str, *, hint: str | None = None, retryable: bool | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class BadInput(VerifierError):
    """The input cannot be judged: malformed trajectory, invalid spec, unreadable artifact."""

    kind = "bad_input"


class UnknownVerifier(BadInput):
    """No verifier is registered under the requested name."""

    def __init__(self, name: str, installed: list[str]) -> None:
        import difflib

        listing = ", ".join(installed) if installed else "none"
        close = difflib.get_close_matches(name[:200], installed, n=1, cutoff=0.6)
        guess = f"did you mean {close[0]!r}? " if close else ""
        super().__init__(
            f"unknown verifier {name!r}; {guess}installed: {listing}",
            hint="check task.verifier, or install the plugin that provides it",
        )
        self.name = name
        self.installed = installed


class InvalidSettings(BadInput, ValueError):
    """Settings (flags, ``VERIFIERS_*`` variables) that do not validate.

    ``problems`` holds one line per invalid setting: where it came from, its value, and the
    valid range; the message is those lines joined by newlines, so a CLI prints one line
    each. Also a ``ValueError``, for callers that validate settings generically.
    """

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class ResourceExhausted(BadInput):
    """Judging this input ran past a worker's memory limit (a hostile or huge artifact).

    Not retried: the same input would exhaust the same limit again.
    """


class InfraError(VerifierError):
    """Something outside the verifier failed (sandbox, worker process, disk).

    Retried unless raised with ``retryable=False`` (a cause a retry cannot fix).
    """

    kind = "infra"
    retryable = True


class SandboxUnavailable(InfraError):
    """No sandbox could be started; ``hint`` says how to fix it."""


class RunAborted(InfraError):
    """A run stopped early: the same non-retryable infra error came ``count`` times in a row.

    Raised by :meth:`verifiers.Engine.stream` when ``EngineSettings.fail_fast_after`` is set
    (the CLI's default is 10). Every result yielded before it is a real verdict; the items of
    the streak were not judged and were not yielded, so a resumed run scores them again.
    ``message`` is the repeated error, ``hint`` its fix.
    """

    retryable = False

    def __init__(self, message: str, *, hint: str | None, count: int) -> None:
        super().__init__(message, hint=hint, retryable=False)
        self.count = count


class VerifierTimeout(VerifierError):
    """The per-item deadline passed before the verifier finished."""

    kind = "timeout"


class MissingDependency(VerifierError):
    """An optional dependency is missing; the message names the extra to install."""

    kind = "infra"
    retryable = False

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"optional dependency {module!r} is not installed",
            hint=f"pip install 'verifiers[{extra}]'",
            retryable=False,
        )
        self.module = module
        self.extra = extra

    @classmethod
    def require(cls, module: str, extra: str) -> ModuleType:
        """Import an optional ``module`` on first use, or raise this error naming the extra.

        The one way the package imports an optional dependency: the message names the module
        that is missing (a dependency of ``module`` when that is what failed to import).

        Example:
            >>> MissingDependency.require("json", "core").__name__
            'json'
            >>> MissingDependency.require("no_such_module", "mesh")
            Traceback (most recent call last):
            verifiers.errors.MissingDependency: optional dependency 'no_such_module' is not installed (pip install 'verifiers[mesh]')

        Raises:
            MissingDependency: ``module``, or a module it imports, is not installed.
        """
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            raise cls(exc.name or module, extra) from None


class InvalidOutput(VerifierError):
    """The model's output made the check impossible: that is the model's ``fail``, reward 0.

    Raise it (anywhere inside ``verify``, or inside a worker target) for a failure that the
    completion or its artifacts caused: text that does not parse, numbers that overflow, a
    call with the wrong arguments. The message becomes the result's feedback, so say what was
    wrong with the output and how a correct one looks. Problems of the task (spec,
    reference) stay :class:`BadInput`; problems of the machine stay :class:`InfraError`.
    """

    kind = "output"
