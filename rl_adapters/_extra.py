"""The per-sample log values veRL (``reward_extra_info``) and OpenRLHF (``extra_logs``) receive.

Both trainers stack these dicts across a batch by the keys of *one* sample: veRL's reward loop
takes the keys of item 0 (a key another sample lacks is a ``KeyError``), OpenRLHF's experience
batching concatenates per-key lists (a key one sample lacks makes the lists unequal: a
``ValueError`` in ``split_experience_batch``). A judged ``code.tests`` row has a
``tests_passed`` component that an errored row does not, so "each sample reports its own
components" crashes the run on the first timeout. The key set is therefore fixed per run:

- ``verifiers_valid``: 1 when judged (``pass``/``fail``), 0 when the verifier abstained;
- ``verifiers_pass``, ``verifiers_skipped``: 1/0 for those statuses;
- ``verifiers_error_<kind>`` for every error kind (``bad_input``, ``infra``, ``timeout``,
  ``verifier``): 1/0. Summed over a batch these are the counts; their means are the shares;
- one key per name in ``components`` (configured once): the component's value for judged rows
  that have it, 0.0 otherwise (divide a component's mean by ``verifiers_valid``'s mean for the
  mean over judged rows).

Every value is a finite float, so nothing here can put a NaN into a trainer's arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verifiers.types import Result

from ._rows import result_reward

__all__ = [
    "ERROR_KINDS",
    "extra_columns",
    "extra_keys",
    "extra_values",
    "parse_components",
    "scored_result",
    "scored_values",
]

ERROR_KINDS: tuple[str, ...] = ("bad_input", "infra", "timeout", "verifier")
_STATUS_KEYS = ("verifiers_valid", "verifiers_pass", "verifiers_skipped")
_ERROR_KEYS = tuple((kind, f"verifiers_error_{kind}") for kind in ERROR_KINDS)


def extra_keys(components: Sequence[str] = ()) -> tuple[str, ...]:
    """The fixed key set for a run that logs ``components``.

    Raises:
        ValueError: a component name collides with a ``verifiers_*`` key or repeats.
    """
    base = _STATUS_KEYS + tuple(f"verifiers_error_{kind}" for kind in ERROR_KINDS)
    names = list(components)
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"component names must be non-empty strings, got {name!r}")
        if name in base or name in ("score", "acc"):
            raise ValueError(f"component name {name!r} collides with a key the adapter writes")
    if len(set(names)) != len(names):
        raise ValueError(f"component names repeat: {names}")
    return base + tuple(names)


def _status_values(status: str, kind: str | None) -> dict[str, float]:
    judged = status in ("pass", "fail")
    out = {
        "verifiers_valid": 1.0 if judged else 0.0,
        "verifiers_pass": 1.0 if status == "pass" else 0.0,
        "verifiers_skipped": 1.0 if status == "skipped" else 0.0,
    }
    for name, key in _ERROR_KEYS:
        out[key] = 1.0 if kind == name and status == "error" else 0.0
    return out


_STATUS_VALUES = {
    (status, kind): _status_values(status, kind)
    for status in ("pass", "fail", "skipped", "error")
    for kind in (None, *ERROR_KINDS)
}
"""The status part of :func:`extra_values` for every (status, error kind): copied per sample
(one C-level dict copy; this runs for every sample of a batch)."""


_SCORED_VALUES = {key: {"score": 0.0, **values} for key, values in _STATUS_VALUES.items()}
""":data:`_STATUS_VALUES` behind a ``score`` key, for :func:`scored_values`."""


def extra_values(result: Result, components: Sequence[str] = ()) -> dict[str, float]:
    """One sample's values for :func:`extra_keys` (same keys, same order, every time)."""
    status = result.status
    kind = result.error.kind if result.error is not None else None
    template = _STATUS_VALUES.get((status, kind))
    out = dict(template) if template is not None else _status_values(status, kind)
    return _add_components(out, result, components)


def scored_values(score: float, result: Result, components: Sequence[str] = ()) -> dict[str, float]:
    """``{"score": score, **extra_values(result, components)}``, built as one dict copy (veRL's
    per-sample return value, made once per sample)."""
    status = result.status
    kind = result.error.kind if result.error is not None else None
    template = _SCORED_VALUES.get((status, kind))
    if template is None:
        out = {"score": score, **_status_values(status, kind)}
    else:
        out = template.copy()
        out["score"] = score
    return _add_components(out, result, components)


def scored_result(
    result: Result, invalid: float, components: Sequence[str] = ()
) -> dict[str, float]:
    """:func:`scored_values` with the score taken from ``result``: its reward, or ``invalid``
    for an unjudged one (what :func:`~verifiers.rl_adapters._rows.result_reward` says), in one
    call (veRL's per-sample return value)."""
    status = result.status
    error = result.error
    template = _SCORED_VALUES.get((status, error.kind if error is not None else None))
    reward = None if status == "error" or status == "skipped" else result.reward
    score = invalid if reward is None else float(reward)
    if template is None:
        return scored_values(score, result, components)
    out = template.copy()
    out["score"] = score
    return _add_components(out, result, components) if components else out


def _add_components(
    out: dict[str, float], result: Result, components: Sequence[str]
) -> dict[str, float]:
    if components:
        judged = result_reward(result) is not None
        for name in components:
            value = result.components.get(name) if judged else None
            out[name] = float(value) if value is not None else 0.0
    return out


def extra_columns(
    results: Sequence[Result], components: Sequence[str] = ()
) -> dict[str, list[float]]:
    """:func:`extra_values` of every result, as one list per key (the same keys, in order).

    Built column by column for a whole batch: OpenRLHF's ``extra_logs`` want lists, and a
    dict per sample that is then unpacked cost more than the verifier itself for
    microsecond verifiers.
    """
    rewards = [result_reward(r) for r in results]
    statuses = [r.status for r in results]
    kinds = [r.error.kind if r.error is not None else None for r in results]
    out: dict[str, list[float]] = {
        "verifiers_valid": [0.0 if v is None else 1.0 for v in rewards],
        "verifiers_pass": [1.0 if s == "pass" else 0.0 for s in statuses],
        "verifiers_skipped": [1.0 if s == "skipped" else 0.0 for s in statuses],
    }
    for name, key in _ERROR_KEYS:
        out[key] = [
            1.0 if k == name and s == "error" else 0.0 for k, s in zip(kinds, statuses, strict=True)
        ]
    for name in components:
        column: list[float] = []
        for r, reward in zip(results, rewards, strict=True):
            value = r.components.get(name) if reward is not None else None
            column.append(float(value) if value is not None else 0.0)
        out[name] = column
    return out


def parse_components(value: object, where: str) -> tuple[str, ...]:
    """Component names from a list/tuple or a comma-separated string (flags, env vars).

    Raises:
        ValueError: anything else, naming ``where`` it came from.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list | tuple) or type(value).__name__ == "ListConfig":
        names: tuple[Any, ...] = tuple(value)  # type: ignore[arg-type]
        if all(isinstance(n, str) for n in names):
            return tuple(str(n) for n in names)
    raise ValueError(
        f"{where} must be a list of component names or a comma-separated string, got {value!r}"
    )
