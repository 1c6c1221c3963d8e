"""Turning a trainer's row (prompt, completion, dataset columns) into a trajectory.

Every adapter sees the same shapes: a completion (text or chat messages), maybe a prompt, and
per-row task information in one of three forms, tried in this order:

1. a ``task`` value: a dict (``{"verifier", "spec", "reference"}`` or ``{"checks": ...}``),
   a JSON string of one, or a :class:`~verifiers.Task`;
2. ``verifier`` / ``spec`` / ``reference`` values (``spec`` as a dict or a JSON string);
3. the adapter's defaults (``verifier=``, ``spec=``) with the reference taken from a column.

A row none of these can turn into a task gets its own ``bad_input`` result (reward ``None``)
instead of raising, so one broken row never sinks the batch; the rows are handed to the
engine as dicts, which it validates once, like any input line (an invalid one becomes its own
``bad_input`` result there).

Hugging Face ``datasets`` stores a dict column as an Arrow struct whose fields are the union
over all rows, missing ones filled with ``None``; ``None`` values at the top level of a task
dict are therefore read as "absent". A JSON string column round-trips exactly and is the
recommended form for mixed tasks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verifiers.types import Result, Task

__all__ = ["MISSING", "TaskDefaults", "make_item", "result_reward"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Sentinel: a value not given at all (distinct from ``None``, a given null)."""


@dataclass(frozen=True)
class TaskDefaults:
    """What an adapter uses for rows that carry no ``task``/``verifier`` of their own.

    Attributes:
        verifier: Registry name used when a row names none.
        spec: That verifier's settings.
        checks: Several verifiers instead of one (``Task.checks`` dicts).
    """

    verifier: str | None = None
    spec: Mapping[str, Any] | None = None
    checks: list[dict[str, Any]] | None = field(default=None)

    def task(self, reference: Any) -> dict[str, Any]:
        """The default task (as a dict) with ``reference`` filled in."""
        if self.verifier is None and not self.checks:
            raise ValueError(
                "row has no 'task' or 'verifier' and the adapter has no default verifier "
                "(pass verifier=... to the adapter, or add a 'task' column)"
            )
        task: dict[str, Any] = {"reference": reference}
        if self.verifier is not None:
            task["verifier"] = self.verifier
        if self.spec is not None:
            task["spec"] = dict(self.spec)
        if self.checks:
            task["checks"] = self.checks
        return task


def _json_or_value(value: Any, what: str) -> Any:
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} is not valid JSON: {exc.msg} at char {exc.pos}") from None
    return value


def _task_from(value: Any, reference: Any) -> Task | dict[str, Any]:
    if isinstance(value, Task):
        if value.reference is None and reference is not MISSING and reference is not None:
            return value.model_copy(update={"reference": reference})
        return value
    raw = _json_or_value(value, "'task'")
    if not isinstance(raw, Mapping):
        raise ValueError(f"'task' must be an object, got {type(raw).__name__}")
    task = {k: v for k, v in raw.items() if v is not None}
    if "reference" not in task and reference is not MISSING and reference is not None:
        task["reference"] = reference
    return task


def _build_task(
    *, task: Any, verifier: Any, spec: Any, reference: Any, defaults: TaskDefaults
) -> Task | dict[str, Any]:
    if task is not MISSING and task is not None:
        return _task_from(task, reference)
    ref = None if reference is MISSING else reference
    if verifier is not MISSING and verifier is not None:
        raw_spec = None if spec is MISSING else _json_or_value(spec, "'spec'")
        if raw_spec is not None and not isinstance(raw_spec, Mapping):
            raise ValueError(f"'spec' must be an object, got {type(raw_spec).__name__}")
        return {"verifier": verifier, "spec": raw_spec, "reference": ref}
    return defaults.task(ref)


def make_item(
    *,
    completion: Any,
    defaults: TaskDefaults,
    prompt: Any = None,
    task: Any = MISSING,
    verifier: Any = MISSING,
    spec: Any = MISSING,
    reference: Any = MISSING,
    id: Any = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any] | Result:
    """A trajectory dict for one row, or a ``bad_input`` result saying what is wrong with it.

    The dict is validated by the engine (once, like any input line); a row that fails that
    validation gets the engine's own ``bad_input`` result, so nothing here validates twice.
    """
    row_id = None if id is None else str(id)
    try:
        built = _build_task(
            task=task, verifier=verifier, spec=spec, reference=reference, defaults=defaults
        )
    except ValueError as exc:
        result = Result.errored("bad_input", f"row cannot be scored: {exc}")
        return result.model_copy(update={"id": row_id})
    item: dict[str, Any] = {"completion": completion, "task": built}
    if row_id is not None:
        item["id"] = row_id
    if prompt is not None:
        item["prompt"] = prompt
    if metadata:
        item["metadata"] = dict(metadata)
    return item


def result_reward(result: Result) -> float | None:
    """The reward a trainer sees: ``Result.reward``, ``None`` for ``error``/``skipped``."""
    if result.status in ("error", "skipped"):
        return None
    return result.reward
