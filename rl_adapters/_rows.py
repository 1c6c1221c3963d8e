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

Throughput: GRPO-style batches repeat one task string for every completion of a group, and
veRL's per-sample calls see it again and again. A JSON task string is therefore parsed and
validated in one step into a :class:`~verifiers.Task` (pydantic's JSON parser), memoised per
distinct string (a bounded LRU; strings over 64 KiB are parsed every time), and that one
frozen ``Task`` is shared by every row built from the string, so the engine validates the
task once per string instead of once per completion. Whenever that fast path does not apply
as it stands (the string is not a valid task, or its reference must be filled in from a
column), the row takes the plain dict path and is judged exactly as before. Rows built from
the same string share nested values (``spec``, ``reference``): treat items as read-only, as
the engine does.

Hugging Face ``datasets`` stores a dict column as an Arrow struct whose fields are the union
over all rows, missing ones filled with ``None``; ``None`` values at the top level of a task
dict are therefore read as "absent". A JSON string column round-trips exactly and is the
recommended form for mixed tasks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

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


_PARSE_CACHE_ITEMS = 512
_PARSE_CACHE_MAX_CHARS = 65_536


@lru_cache(maxsize=_PARSE_CACHE_ITEMS)
def _parse_cached(text: str | bytes) -> Any:
    return json.loads(text)


def parse_json(text: str | bytes) -> Any:
    """``json.loads``, memoised for strings up to 64 KiB (see the module docstring).

    Raises:
        json.JSONDecodeError: ``text`` is not JSON (failures are not memoised).
    """
    if len(text) <= _PARSE_CACHE_MAX_CHARS:
        return _parse_cached(text)
    return json.loads(text)


@lru_cache(maxsize=_PARSE_CACHE_ITEMS)
def _task_cached(text: str | bytes) -> Task | None:
    return _validate_task_json(text)


def _validate_task_json(text: str | bytes) -> Task | None:
    try:
        return Task.model_validate_json(text)
    except ValidationError:
        return None


def task_from_json(text: str | bytes) -> Task | None:
    """A JSON task string parsed and validated in one step (memoised like :func:`parse_json`).

    ``None`` when the text is not a valid task as it stands (not JSON, not an object, a
    top-level ``null`` that the dict path would drop, ...): the caller then takes the dict
    path, which reports the problem exactly as before. Where both succeed they agree: a
    top-level ``null`` here means the field's default, which is what dropping it means.
    """
    if len(text) <= _PARSE_CACHE_MAX_CHARS:
        return _task_cached(text)
    return _validate_task_json(text)


def _json_or_value(value: Any, what: str) -> Any:
    if isinstance(value, str | bytes):
        try:
            return parse_json(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} is not valid JSON: {exc.msg} at char {exc.pos}") from None
    return value


def _task_from(value: Any, reference: Any) -> Task | dict[str, Any]:
    if isinstance(value, Task):
        if value.reference is None and reference is not MISSING and reference is not None:
            return value.model_copy(update={"reference": reference})
        return value
    if isinstance(value, str | bytes):
        # The fast path: one validated, shared Task per distinct string, so the engine does
        # not validate the same task dict again for every completion of a group.
        parsed = task_from_json(value)
        if parsed is not None and (
            parsed.reference is not None or reference is MISSING or reference is None
        ):
            return parsed
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
    Its ``task`` is a dict, or a shared, already validated :class:`~verifiers.Task` when the
    row's task was a ``Task`` or a valid JSON task string (see the module docstring).
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
