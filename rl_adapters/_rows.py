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
task once per string instead of once per completion. A row that brings only a reference (veRL's
``ground_truth`` under ``reward_kwargs.verifier``, a reference column) gets the same: one
validated default task per exact reference (:data:`REFERENCES`, keyed by the reference's type
and value and the defaults' content, never by position or a digest), from the reference's
second row on (a reference seen once is cheaper as a task dict inside the trajectory the
engine validates anyway). Whenever that fast path does not apply
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
import threading
from collections.abc import Callable, Mapping
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

    Read-only once made (the adapters build it from their settings): the validated tasks of
    :meth:`validated` are memoised under a key taken from these fields when it is made.

    Attributes:
        verifier: Registry name used when a row names none.
        spec: That verifier's settings.
        checks: Several verifiers instead of one (``Task.checks`` dicts).
    """

    verifier: str | None = None
    spec: Mapping[str, Any] | None = None
    checks: list[dict[str, Any]] | None = field(default=None)
    _key: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The defaults' part of a REFERENCES key: their exact content as JSON (no ``default=``,
        # so nothing is stringified into a look-alike), or None (not JSON: no memo).
        try:
            key = json.dumps([self.verifier, self.spec, self.checks], sort_keys=True)
        except (TypeError, ValueError):
            key = None
        object.__setattr__(self, "_key", key)

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

    def validated(self, reference: str | int | float) -> Task | None:
        """:meth:`task` of ``reference`` as a validated, shared :class:`~verifiers.Task`.

        Memoised in :data:`REFERENCES` by the exact reference (its type and value: ``"3"``,
        ``3``, ``3.0`` and ``True`` are four keys; two strings share a key only when they are
        equal code point for code point) and these defaults' content. ``None`` the first time
        a reference is seen, or when it does not validate as it stands (or the defaults are
        not JSON): the caller then takes the dict path, which judges it (and reports any
        problem) exactly as before.
        """
        if self._key is None:
            return None
        return REFERENCES.get((self._key, type(reference), reference), self)


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


class TaskMemo:
    """Validated tasks by an exact key: a bounded memo shared by every adapter of a process.

    :data:`TASKS` keys a JSON task string by the whole string, :data:`REFERENCES` a default
    task by ``(defaults, type of the reference, reference)``: a hit is a key equal to one
    already validated, so it can never hand one row the task of another (two rows that
    differ in one character of their task or reference are two keys), and a column mutated
    between batches is simply new keys. Keys are never hashed into a digest that could
    collide: the dict compares them in full.

    Two generations of plain dicts (a lookup is one or two ``dict.get``): new entries go to
    the young one; when it holds ``items // 2`` entries or ``chars // 2`` characters it
    becomes the old one and the previous old one is dropped; a hit in the old generation is
    copied to the young one. So at most ``items`` entries and ``chars`` characters are held,
    and tasks in use survive. Keys over ``max_chars`` are validated every time, never kept.

    Args:
        items: Entries held at most.
        chars: Characters of keys held at most.
        max_chars: Longest key kept.
        validate: The validated task of a key (``None``: not valid as it stands); the default
            parses a JSON task string.
        size: A key's size in characters (default ``len``).
        from_second: Validate a key only when it comes back: its first lookup records it and
            answers ``None`` (the caller's dict path, judged exactly as before). For keys whose
            validation costs more than it saves once (a small default task: validating it
            apart and then the trajectory around it cost more than the engine validating the
            trajectory with the task dict inside), so a reference seen once (a fresh ground
            truth per sample) pays a dict lookup, not a second validation.
    """

    def __init__(
        self,
        items: int,
        chars: int,
        max_chars: int,
        validate: Callable[[Any, Any], Task | None] | None = None,
        size: Callable[[Any], int] = len,
        from_second: bool = False,
    ) -> None:
        self.items, self.chars, self.max_chars = items, chars, max_chars
        self.from_second = from_second
        self._validate = validate or _validate_task_json
        self._size = size
        self._young: dict[Any, Task | None] = {}
        self._old: dict[Any, Task | None] = {}
        self._young_chars = 0
        self._lock = threading.Lock()

    def get(self, key: Any, context: Any = None) -> Task | None:
        """The validated task of ``key``, or ``None`` (not a valid task as it stands).

        ``context`` is handed to ``validate`` on a miss (the :class:`TaskDefaults` whose
        task it is); it is not part of the key, so the key must name all it depends on.
        """
        task = self._young.get(key, MISSING)
        if task is not MISSING and task is not _SEEN:
            return task  # type: ignore[no-any-return]
        if task is MISSING:
            task = self._old.get(key, MISSING)
        if task is MISSING and self.from_second:
            task = _SEEN  # first sight: recorded, not validated (the caller's dict path)
        elif task is MISSING or task is _SEEN:
            task = self._validate(key, context)
        size = self._size(key)
        if size <= self.max_chars:
            with self._lock:
                if (
                    len(self._young) >= self.items // 2
                    or self._young_chars + size > self.chars // 2
                ):
                    self._old, self._young, self._young_chars = self._young, {}, 0
                self._young[key] = task
                self._young_chars += size
        return None if task is _SEEN else task  # type: ignore[no-any-return]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._young, self._old, self._young_chars = {}, {}, 0

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


_SEEN: Any = _Missing()
"""A :class:`TaskMemo` entry of a ``from_second`` key looked up once: not validated yet."""


def _validate_task_json(text: str | bytes, _context: Any = None) -> Task | None:
    try:
        return Task.model_validate_json(text)
    except ValidationError:
        return None


def _validate_default_task(key: tuple[str, type, Any], defaults: TaskDefaults) -> Task | None:
    try:
        return Task.model_validate(defaults.task(key[2]))
    except (ValidationError, ValueError):
        return None


def _reference_size(key: tuple[str, type, Any]) -> int:
    reference = key[2]
    return len(key[0]) + (len(reference) if isinstance(reference, str) else 8)


_TASK_MEMO_ITEMS = 8192
_TASK_MEMO_CHARS = 32 * 1024 * 1024
TASKS = TaskMemo(_TASK_MEMO_ITEMS, _TASK_MEMO_CHARS, _PARSE_CACHE_MAX_CHARS)
"""The process's task memo (8,192 strings, 32 Mi characters in all, 64 KiB each at most)."""

REFERENCES = TaskMemo(
    _TASK_MEMO_ITEMS,
    _TASK_MEMO_CHARS,
    _PARSE_CACHE_MAX_CHARS,
    validate=_validate_default_task,
    size=_reference_size,
    from_second=True,
)
"""Default tasks by ``(defaults, type(reference), reference)``: veRL's ``ground_truth`` column
and the adapters' reference columns (same bounds as :data:`TASKS`; validated from a
reference's second row on: a GRPO group's, an epoch's)."""

_MEMO_REFERENCE_TYPES = (str, int, float)
"""References memoised as they stand (exact types only: a subclass may redefine equality)."""


def task_from_json(text: str | bytes) -> Task | None:
    """A JSON task string parsed and validated in one step (memoised in :data:`TASKS`).

    ``None`` when the text is not a valid task as it stands (not JSON, not an object, a
    top-level ``null`` that the dict path would drop, ...): the caller then takes the dict
    path, which reports the problem exactly as before. Where both succeed they agree: a
    top-level ``null`` here means the field's default, which is what dropping it means.
    """
    return TASKS.get(text)


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
    row's task was a ``Task`` or a valid JSON task string, or when the row gave only a plain
    reference (``str``/``int``/``float``) for the adapter's defaults (see the module docstring).
    """
    row_id = None if id is None else str(id)
    built: Any = None
    if verifier is MISSING and spec is MISSING:
        # The hot path of every adapter (a JSON task column or an already validated Task,
        # nothing to fill in; or the default task of a plain reference): one memo lookup;
        # anything else takes the general path below.
        # ``metadata`` is then not copied: the engine's validation copies it.
        kind = type(task)
        if reference is MISSING or reference is None:
            built = TASKS.get(task) if kind is str else task if kind is Task else None
        elif task is MISSING and type(reference) in _MEMO_REFERENCE_TYPES:
            # veRL's ground truth (or a reference column) under the adapter's default
            # verifier: one validated Task per exact reference, not a task dict per row.
            built = defaults.validated(reference)
            if built is None and (defaults.verifier is not None or defaults.checks):
                built = defaults.task(reference)  # what the general path below builds
    if built is None:
        try:
            built = _build_task(
                task=task, verifier=verifier, spec=spec, reference=reference, defaults=defaults
            )
        except ValueError as exc:
            result = Result.errored("bad_input", f"row cannot be scored: {exc}")
            return result.model_copy(update={"id": row_id})
        metadata = dict(metadata) if metadata else metadata
    item: dict[str, Any] = {"completion": completion, "task": built}
    if row_id is not None:
        item["id"] = row_id
    if prompt is not None:
        item["prompt"] = prompt
    if metadata:
        item["metadata"] = metadata
    return item


def result_reward(result: Result) -> float | None:
    """The reward a trainer sees: ``Result.reward``, ``None`` for ``error``/``skipped``."""
    if result.status in ("error", "skipped"):
        return None
    return result.reward
