"""Gates and partial credit: the one reward rule of the verifiers that drive an engine.

``render.blender``, ``cad.script`` and ``game.godot`` judge a model-written script by a list
of named checks (:class:`CheckOutcome`), each a score in [0, 1]. Some checks are *gates*:
the structural ones that every spec keeps (the script ran, the scene loaded, the part is a
valid solid: nothing else can be measured without them) plus any the spec adds. The rule,
written once here (:func:`gated_mean`):

- a failed gate, or a component that was never checked (a gate stopped the checks before
  it), makes the reward 0: a scene that does not run earns nothing for the checks it never
  reached;
- otherwise the reward is the mean of the non-gate components (1.0 when there are none);
- ``pass`` means every component is 1 (``Result.scored`` decides it from the reward).

:func:`validate_gates` is the spec-side half: gates name components of the spec, the
structural ones are always there, and component names are distinct (two components of one
name would overwrite each other's score).

The rest are the small pieces those verifiers share around a sandboxed script job: how its
process ended (:func:`process_end`), the signal's name for feedback (:func:`signal_name`),
the files a job left (:func:`read_left`), and the model's own error report rebuilt field by field (:func:`untrusted_error`): whatever
the model's process wrote is read as hostile data, never trusted for a verdict.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import BadInput

__all__ = [
    "CheckOutcome",
    "GatedScore",
    "gated_mean",
    "process_end",
    "read_left",
    "signal_name",
    "text_capped",
    "untrusted_error",
    "validate_gates",
]


@dataclass
class CheckOutcome:
    """One named check: its score in [0, 1], whether it gates, and a line for the model."""

    name: str
    score: float
    gate: bool = False
    message: str = ""

    @property
    def ok(self) -> bool:
        """The check is fully met."""
        return self.score >= 1.0 - 1e-9


@dataclass(frozen=True)
class GatedScore:
    """What :func:`gated_mean` decided."""

    reward: float
    components: dict[str, float]
    """Every component of the spec, in the spec's order; unchecked ones are 0."""
    lines: list[str]
    """One feedback line per check that is not fully met (and has something to say)."""
    checks: dict[str, dict[str, Any]]
    """``details.checks``: score, gate and ok of each check that ran."""


def gated_mean(
    checks: Sequence[CheckOutcome], names: Sequence[str], gates: Iterable[str]
) -> GatedScore:
    """The reward of ``checks`` for a spec with components ``names`` and gates ``gates``.

    Marks each check's ``gate`` from ``gates`` (the spec decides, not the check).
    """
    components = dict.fromkeys(names, 0.0)
    gate_set = set(gates)
    for check in checks:
        components[check.name] = check.score
        check.gate = check.name in gate_set
    checked = {c.name for c in checks}
    stopped = any(c.gate and not c.ok for c in checks) or any(n not in checked for n in names)
    soft = [c.score for c in checks if not c.gate]
    reward = 0.0 if stopped else (sum(soft) / len(soft) if soft else 1.0)
    return GatedScore(
        reward=reward,
        components=components,
        lines=[c.message for c in checks if not c.ok and c.message],
        checks={c.name: {"score": c.score, "gate": c.gate, "ok": c.ok} for c in checks},
    )


def validate_gates(names: Sequence[str], gates: Sequence[str], structural: Sequence[str]) -> None:
    """Check a spec's ``gates`` against its component ``names``.

    A structural gate that is not a component of this spec (render's ``camera`` when the
    spec expects no camera) may stay listed; one that is must be listed.

    Raises:
        ValueError: component names repeat, a gate is not a component, or a structural gate
            that is a component of this spec is missing (the message names the fix).
    """
    dupes = sorted({n for n in names if list(names).count(n) > 1})
    if dupes:
        raise ValueError(f"component names repeat: {dupes}; give each check a distinct label")
    unknown = [g for g in gates if g not in names and g not in structural]
    if unknown:
        raise ValueError(
            f"gates {unknown} are not components of this spec; known: {', '.join(names)}"
        )
    missing = [g for g in structural if g in names and g not in gates]
    if missing:
        raise ValueError(
            f"gates must include {', '.join(missing)} (the other checks cannot run without "
            f"them): use {sorted(set(gates) | set(missing))}"
        )


async def read_left(sb: Any, name: str, cap: int) -> bytes | None:
    """A file a job left in its sandbox, which the model's process could have replaced.

    None when it is absent, not a regular file or over ``cap`` bytes, never an error.
    """
    try:
        return bytes(await sb.read_file(name, max_bytes=cap))
    except (FileNotFoundError, BadInput):
        return None


class _Run(Protocol):
    @property
    def timed_out(self) -> bool: ...
    @property
    def oom_killed(self) -> bool: ...
    @property
    def returncode(self) -> int: ...


def process_end(run: _Run) -> tuple[str, int]:
    """How a sandboxed job's process ended: ``(how, code)``.

    ``how`` is one of ``timeout`` (code 0), ``oom`` (the exit status), ``signal`` (the signal
    number) or ``exit`` (the exit status). An out-of-memory kill counts only when the process
    did not exit 0: a job that finished its work is judged by its work.
    """
    if run.timed_out:
        return "timeout", 0
    if run.oom_killed and run.returncode != 0:
        return "oom", run.returncode
    if run.returncode < 0:
        return "signal", -run.returncode
    return "exit", run.returncode


def signal_name(code: int) -> str:
    """``SIGSEGV`` for 11; ``signal 99`` for a number that names no signal."""
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def text_capped(value: Any, cap: int = 1000) -> str:
    """``value`` as valid UTF-8 text of at most ``cap`` characters (hostile text in feedback)."""
    return str(value).encode("utf-8", "replace").decode("utf-8")[:cap]


def untrusted_error(error: Any) -> dict[str, Any] | None:
    """An exception report written by the model's process, rebuilt from known keys and types.

    Text is made valid UTF-8 and capped, at most 5 frames are kept; None if it is not one.
    """
    if not isinstance(error, dict):
        return None
    listed = error.get("frames")
    frames: list[Any] = listed if isinstance(listed, list) else []
    return {
        "type": text_capped(error.get("type", "Exception"), 100),
        "message": text_capped(error.get("message", "")),
        "frames": [
            {
                "line": f.get("line") if isinstance(f.get("line"), int) else None,
                "func": text_capped(f.get("func", ""), 200),
                "text": text_capped(f.get("text", ""), 300),
            }
            for f in frames[:5]
            if isinstance(f, dict)
        ],
    }
