"""veRL reward functions: ``compute_score`` for veRL's default reward managers.

For zero-gradient abstains use the reward manager instead
(:mod:`verifiers.rl_adapters.verl_manager`, loaded through veRL's ``source: importlib`` hook);
these functions are for veRL's own managers (``naive``, ``dapo``), which call one sample at a
time and cannot see a sample's group.

veRL 0.9 reads the custom reward function under ``reward.*`` (the top-level
``custom_reward_function.*`` keys of older releases are ignored, and for gsm8k/MATH/aime
data sources veRL then silently uses its own scorer)::

    reward.custom_reward_function.path=pkg://verifiers.rl_adapters.verl
    reward.custom_reward_function.name=compute_score        # or compute_score_async
    +reward.custom_reward_function.reward_kwargs.verifier=answer.numeric
    +reward.custom_reward_function.reward_kwargs.components=[tests_passed]

veRL merges ``reward_kwargs`` into every call (they take precedence). ``pkg://`` imports the
module by name; a file path works too (absolute imports), and then the functions handed out
are the importable module's, so they pickle into the ``remote`` manager's Ray workers.
``compute_score_batch`` has no manager in veRL 0.9 (``reward_manager=batch`` is gone); it is
kept for callers of its own.

What is judged: the task comes from ``extra_info["task"]`` (dict or JSON string), else from a
``ground_truth`` that is itself a task dict, else from the ``verifier``/``spec`` reward kwargs
(or ``verifiers_by_source``, a ``data_source -> verifier`` map) with ``ground_truth`` as the
reference.

The return value is a dict with ``score`` (what veRL optimises) and a **fixed key set**
(:mod:`verifiers.rl_adapters._extra`): ``verifiers_valid``, ``verifiers_pass``,
``verifiers_skipped``, ``verifiers_error_<kind>`` and one key per name in
``reward_kwargs.components``. veRL stacks the dicts by the keys of sample 0, so every sample,
errored or not, returns the same keys. An unjudged sample gets ``score = invalid_score``,
which must be set explicitly to a finite value: under these managers no value gives it zero
advantage (they show one sample at a time, never its group), and a NaN would make its GRPO
group, the mini-batch loss and the optimizer step NaN. Unset (or NaN/inf), the first call
raises :class:`~verifiers.errors.InvalidSettings` naming the two fixes (the reward manager, or
an explicit value), so the run stops at its first step instead of training on NaN. A row that
names no verifier while no default is configured raises too: that is the dataset's and the
config's doing, never the model's, and it would be unjudged on every step.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from operator import is_
from typing import Any

from verifiers.rl_adapters._extra import extra_keys, parse_components, scored_result
from verifiers.rl_adapters._rows import (
    _MEMO_REFERENCE_TYPES,
    MISSING,
    REFERENCES,
    TASKS,
    TaskDefaults,
    make_item,
)
from verifiers.rl_adapters._scorer import MachineConcurrency, Scorer

from verifiers.engine import EngineSettings
from verifiers.errors import InvalidSettings
from verifiers.types import Result

__all__ = ["compute_score", "compute_score_async", "compute_score_batch", "score_dict"]

_SETTING_KEYS = frozenset(EngineSettings.model_fields)
_scorers: dict[str, Scorer] = {}
_scorers_lock = threading.Lock()


_SCORER_KEYS = _SETTING_KEYS | {"machine_concurrency", "machine_key"}


def _scorer(kwargs: Mapping[str, Any]) -> Scorer:
    """One process-wide scorer per distinct engine configuration (canonical JSON key)."""
    overrides = {k: kwargs[k] for k in _SETTING_KEYS if k in kwargs}
    machine: MachineConcurrency = kwargs.get("machine_concurrency", "auto")
    machine_key = str(kwargs.get("machine_key", "default"))
    key = json.dumps([overrides, machine, machine_key], sort_keys=True, default=str)
    with _scorers_lock:
        scorer = _scorers.get(key)
        if scorer is None:
            scorer = Scorer(
                EngineSettings.from_env(**overrides),
                machine_concurrency=machine,
                machine_key=machine_key,
            )
            _scorers[key] = scorer
        return scorer


class _Config:
    """What one distinct set of reward kwargs decides, read once (see :func:`_config`).

    veRL's naive/dapo managers call :func:`compute_score` once per sample with the same
    ``reward_kwargs``: reading them per call (the invalid score, the component names, the
    scorer, the row defaults) cost more than an inline verdict.
    """

    __slots__ = ("invalid", "names", "rows", "scorer")

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        self.invalid = _invalid(kwargs)  # a configuration that can only answer NaN: refused
        self.names = _components(kwargs)
        self.rows = _Rows(kwargs)
        self.scorer = _scorer(kwargs)

    def score_dict(self, result: Result) -> dict[str, float]:
        return scored_result(result, self.invalid, self.names)


_configs: dict[tuple[Any, ...], _Config] = {}
_CONFIGS_MAX = 256
_KEY_NODES = 4096
_SCALARS = frozenset({str, int, float, bool, type(None)})


class _KeyTooLarge(Exception):
    pass


def _frozen(value: Any, budget: list[int]) -> Any:
    """``value`` as a hashable, exact key: types kept at every level (``1``, ``1.0`` and
    ``True`` differ), containers by content (OmegaConf's included), at most ``_KEY_NODES``
    nodes in all.

    Raises:
        TypeError: a value that is neither a container nor hashable.
        _KeyTooLarge: more nodes than the budget.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise _KeyTooLarge
    kind = type(value)
    if kind in _SCALARS:
        return (kind, value)
    if isinstance(value, Mapping):
        return (kind, tuple((_frozen(k, budget), _frozen(v, budget)) for k, v in value.items()))
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return (kind, tuple(_frozen(v, budget) for v in value))
    hash(value)
    return (kind, value)


_last: tuple[tuple[str, ...], tuple[type, ...], tuple[Any, ...], _Config | None] = (
    (),
    (),
    (),
    None,
)
"""The config of the last all-scalar kwargs looked up, with their names, types and values:
veRL's naive manager passes the same ``reward_kwargs`` on every call, so this one comparison
(names, values and types equal: exactly what the content key compares) replaces building and
hashing the key. Replaced as one tuple, so a thread never reads a mixed entry."""


def _config(kwargs: Mapping[str, Any]) -> _Config:
    """The :class:`_Config` of ``kwargs``, memoised by their exact content.

    The key is every (name, value) with each value's type at every level, so two kwargs sets
    share a config only when they are equal value for value and type for type; a value that
    is neither a container nor hashable, or a key of more than ``_KEY_NODES`` nodes, is read
    afresh on every call. At most ``_CONFIGS_MAX`` configs are kept. The model's output never
    reaches the key (it arrives as ``solution_str``, apart from the kwargs). The per-sample
    hot path (veRL's naive manager: the same kwargs on every call) compares them with the
    last ones first (:data:`_last`).

    Raises:
        InvalidSettings: ``invalid_score`` unset or not finite, or bad ``components`` (on
            every call: a refused config is never memoised).
    """
    global _last
    names = tuple(kwargs)
    values = tuple(kwargs.values())
    last_names, last_types, last_values, config = _last
    # veRL merges the very same reward_kwargs objects into every call: the same objects
    # (scalars only are ever kept in _last) are the same values of the same types
    if (
        config is not None
        and len(values) == len(last_values)
        and all(map(is_, values, last_values))
        and names == last_names
    ):
        return config
    types = tuple(map(type, values))
    # types first: the values compared are then scalars of the same types, never an
    # arbitrary object's ``__eq__``
    if types == last_types and names == last_names and values == last_values and config:
        return config
    key: tuple[Any, ...] | None
    scalars = _SCALARS.issuperset(types)
    try:
        if scalars:  # the usual case, built without a Python-level loop
            key = (names, types, values)
        else:
            key = (names, _frozen(values, [_KEY_NODES]))
        config = _configs.get(key)
    except (TypeError, _KeyTooLarge, RecursionError):
        key, config = None, None
    if config is None:
        config = _Config(kwargs)
        if key is not None:
            with _scorers_lock:
                if len(_configs) >= _CONFIGS_MAX:  # e.g. a NaN never matches itself
                    _configs.clear()
                _configs[key] = config
    if scalars and key is not None:
        _last = (names, types, values, config)
    return config


_ROWS_MEMO_MAX = 1024
_NO_INFO: Mapping[str, Any] = {}
_PLAIN_TRUTHS = frozenset({str, int, float, bool, type(None)})


class _Rows:
    """What every sample of one configuration shares: the reward kwargs, read once.

    One per :class:`_Config` (and per manager), so the per-sample work is the row itself
    (veRL passes the same kwargs to every sample). Its per-verifier defaults and per-source
    metadata are kept for at most ``_ROWS_MEMO_MAX`` distinct values each.
    """

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        by_source = kwargs.get("verifiers_by_source") or {}
        self.by_source: Mapping[Any, Any] = by_source if isinstance(by_source, Mapping) else {}
        self.verifier = kwargs.get("verifier")
        self.spec = kwargs.get("spec")
        self._defaults: dict[Any, TaskDefaults] = {}
        self._metadata: dict[str, dict[str, str]] = {}
        self._plain: dict[str, tuple[TaskDefaults, dict[str, str]]] = {}
        """Per data source (a ``str``) whose rows take the configured verifier: its defaults
        and metadata, for the plain-row path of :meth:`item` (filled by :meth:`_item`)."""

    def defaults(self, data_source: Any) -> TaskDefaults:
        verifier = self.verifier
        if data_source in self.by_source:
            verifier = self.by_source[data_source]
        try:
            return self._defaults[verifier]
        except (KeyError, TypeError):  # TypeError: an unhashable verifier value
            defaults = TaskDefaults(verifier=verifier, spec=self.spec)
            try:
                if len(self._defaults) >= _ROWS_MEMO_MAX:
                    self._defaults.clear()
                self._defaults[verifier] = defaults
            except TypeError:
                pass
            return defaults

    def item(
        self,
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None,
    ) -> dict[str, Any] | Result:
        """The item of one row: :meth:`_item`'s, with its two usual shapes built directly.

        Both shortcuts build the very dict :meth:`_item` builds for that row (key for key,
        the same shared ``Task``), and hand every other row to it unchanged:

        - a plain ground truth under the configured verifier (veRL's usual dataset);
        - ``extra_info["task"]``, a JSON string that validates as it stands, with no ground
          truth to fill in (or a task that has its own reference).
        """
        if type(data_source) is str and (extra_info is None or type(extra_info) is dict):
            raw = None if extra_info is None else extra_info.get("task")
            built: Any = None
            metadata: dict[str, str] | None = None
            if raw is None:
                if type(ground_truth) in _MEMO_REFERENCE_TYPES:
                    # A plain ground truth: make_item's reference branch.
                    plain = self._plain.get(data_source)
                    if plain is not None:
                        defaults, metadata = plain
                        if defaults._key is not None:
                            built = REFERENCES.get(
                                (defaults._key, type(ground_truth), ground_truth), defaults
                            )
                        if built is None:
                            built = defaults.task(ground_truth)
            elif type(raw) is str:
                # A task string: make_item's hot path (ground truth None) or _task_from's
                # (a task that has its own reference wins over the ground truth).
                metadata = self._metadata.get(data_source)
                if metadata is not None:
                    built = TASKS.get(raw)
                    if built is not None and ground_truth is not None and built.reference is None:
                        built = None  # the ground truth is filled in: the general path
            if built is not None and metadata is not None:
                item: dict[str, Any] = {"completion": solution_str, "task": built}
                if extra_info:
                    row_id = extra_info.get("id", extra_info.get("index"))
                    if row_id is not None:
                        item["id"] = str(row_id)
                    prompt = extra_info.get("prompt")
                    if isinstance(prompt, str):
                        item["prompt"] = prompt
                item["metadata"] = metadata
                return item
        return self._item(data_source, solution_str, ground_truth, extra_info)

    def _item(
        self,
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None,
    ) -> dict[str, Any] | Result:
        # ``type(x) in`` first: the usual shapes (no extra_info, a plain ground truth) skip
        # the ABC checks, which cost a tenth of the adapter's own work per sample.
        info = (
            extra_info if type(extra_info) is dict or isinstance(extra_info, Mapping) else _NO_INFO
        )
        task: Any = MISSING
        reference: Any = ground_truth
        if info.get("task") is not None:
            task = info["task"]
        elif (
            type(ground_truth) not in _PLAIN_TRUTHS
            and isinstance(ground_truth, Mapping)
            and ("verifier" in ground_truth or "checks" in ground_truth)
        ):
            task, reference = dict(ground_truth), MISSING
        defaults = self.defaults(data_source)
        if task is MISSING and defaults.verifier is None:
            # Which verifier judges a row is the dataset's and the config's choice, never the
            # model's: a row none of them names would be unjudged on every step.
            raise InvalidSettings(
                [
                    f"a row of data_source {str(data_source)[:60]!r} has no task "
                    "(extra_info['task'], or a ground_truth with 'verifier'/'checks') and no "
                    "default verifier is set; set reward_kwargs.verifier (or "
                    "verifiers_by_source) or put the task in extra_info['task']"
                ]
            )
        row_id = info.get("id", info.get("index"))
        prompt = info.get("prompt")
        source = str(data_source)
        metadata = self._metadata.get(source)
        if metadata is None:  # one per data source, shared by its rows (items are read-only)
            if len(self._metadata) >= _ROWS_MEMO_MAX:
                self._metadata.clear()
            metadata = self._metadata[source] = {"data_source": source}
        if (
            task is MISSING
            and defaults.verifier is not None
            and type(data_source) is str
            and len(self._plain) < _ROWS_MEMO_MAX
        ):
            self._plain[data_source] = (defaults, metadata)  # this source's rows: item()
        return make_item(
            completion=solution_str,
            prompt=prompt if isinstance(prompt, str) else None,
            task=task,
            reference=reference,
            id=row_id,
            metadata=metadata,
            defaults=defaults,
        )


def score_dict(result: Result, kwargs: Mapping[str, Any]) -> dict[str, float]:
    """The dict veRL receives for one result (see the module docstring)."""
    return _score_dict(result, _invalid(kwargs), _components(kwargs))


def _invalid(kwargs: Mapping[str, Any]) -> float:
    """The score of an unjudged sample under veRL's own managers: explicit and finite.

    ``naive``/``dapo`` hand over one sample at a time and cannot see its group, so no value
    gives it zero advantage, and a NaN makes the GRPO group, the mini-batch loss and the step
    NaN. So the choice is the user's, made knowingly, and is refused until made.
    """
    raw = kwargs.get("invalid_score")
    value = None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    if value is None or not math.isfinite(value):
        got = "unset" if raw is None else f"{raw!r}"
        raise InvalidSettings(
            [
                f"reward_kwargs.invalid_score is {got}: veRL's naive/dapo managers show one "
                "sample at a time, so an unjudged sample cannot get zero advantage and a NaN "
                "voids the step. Use the VerifiersRewardManager "
                "(reward.reward_manager.source=importlib, see docs/adapters.md), or set "
                "+reward.custom_reward_function.reward_kwargs.invalid_score=<finite value> to "
                "train on that value instead"
            ]
        )
    return value


def _components(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    names = parse_components(kwargs.get("components"), "reward_kwargs.components")
    extra_keys(names)  # validates the names
    return names


def _score_dict(result: Result, invalid: float, names: Sequence[str]) -> dict[str, float]:
    return scored_result(result, invalid, names)


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """Score one sample (blocking). Safe from veRL's executor threads.

    Args:
        data_source: The row's ``data_source`` (selects a verifier via ``verifiers_by_source``).
        solution_str: The decoded response.
        ground_truth: ``reward_model.ground_truth``: the reference, or a whole task dict.
        extra_info: The row's ``extra_info``; ``extra_info["task"]`` overrides everything.
        **kwargs: veRL's ``reward_kwargs``: ``verifier``, ``spec``, ``verifiers_by_source``,
            ``components``, ``invalid_score`` (required, finite), any :class:`~verifiers.EngineSettings` field
            (``concurrency``, ``timeout_s``, ``sandbox`` ...), ``machine_concurrency``.

    Returns:
        ``{"score", **fixed_keys}``: the same keys for every sample (module docstring).
    """
    config = _config(kwargs)  # a configuration that can only answer NaN fails on every call
    item = config.rows.item(data_source, solution_str, ground_truth, extra_info)
    # An inline verdict (answer.numeric ...) or a bad input is made right here; anything that
    # needs judging goes to the engine's loop as a batch of one.
    result = config.scorer.score_now(item)
    if result is None:
        result = config.scorer.score([item])[0]
    return scored_result(result, config.invalid, config.names)  # config.score_dict, inlined


async def compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """:func:`compute_score` for veRL's async reward loop: awaits without blocking it."""
    config = _config(kwargs)
    item = config.rows.item(data_source, solution_str, ground_truth, extra_info)
    result = config.scorer.score_now(item)
    if result is None:
        result = (await config.scorer.score_async([item]))[0]
    return config.score_dict(result)


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """veRL's ``batch`` reward manager form: the whole batch in one engine pass."""
    # veRL passes numpy object arrays here, whose truth value is an error: test for None.
    infos: Sequence[Mapping[str, Any] | None] = (
        [None] * len(solution_strs) if extra_infos is None else list(extra_infos)
    )
    config = _config(kwargs)
    items = [
        config.rows.item(ds, sol, gt, info)
        for ds, sol, gt, info in zip(data_sources, solution_strs, ground_truths, infos, strict=True)
    ]
    return [config.score_dict(r) for r in config.scorer.score(items)]


if __name__ != "verifiers.rl_adapters.verl":
    # Loaded from this file under another module name (veRL's ``path=/file.py`` loader): hand
    # out the functions of the importable module instead, so they pickle by reference into
    # veRL's Ray workers (the ``remote`` manager) and share its engines.
    import importlib as _importlib

    _canonical = _importlib.import_module("verifiers.rl_adapters.verl")
    compute_score = _canonical.compute_score
    compute_score_async = _canonical.compute_score_async
    compute_score_batch = _canonical.compute_score_batch
    score_dict = _canonical.score_dict
