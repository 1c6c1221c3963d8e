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
from typing import Any

from verifiers.rl_adapters._extra import extra_keys, extra_values, parse_components
from verifiers.rl_adapters._rows import MISSING, TaskDefaults, make_item, result_reward
from verifiers.rl_adapters._scorer import MachineConcurrency, Scorer

from verifiers.engine import EngineSettings
from verifiers.errors import InvalidSettings
from verifiers.types import Result

__all__ = ["compute_score", "compute_score_async", "compute_score_batch", "score_dict"]

_SETTING_KEYS = frozenset(EngineSettings.model_fields)
_scorers: dict[str, Scorer] = {}
_scorers_lock = threading.Lock()


_SCORER_KEYS = _SETTING_KEYS | {"machine_concurrency", "machine_key"}
_by_kwargs: dict[tuple[tuple[str, type, Any], ...], Scorer] = {}


def _scorer(kwargs: Mapping[str, Any]) -> Scorer:
    """One process-wide scorer per distinct engine configuration.

    veRL's per-sample ``compute_score`` asks for it on every call with the same kwargs, so
    the (hashable) kwargs that pick the scorer are memoised in front of the canonical JSON
    key.
    """
    fast: tuple[tuple[str, type, Any], ...] | None
    fast = tuple(sorted((k, type(v), v) for k, v in kwargs.items() if k in _SCORER_KEYS))
    try:
        scorer = _by_kwargs.get(fast)
    except TypeError:  # an unhashable value: the canonical key only
        scorer, fast = None, None
    if scorer is not None:
        return scorer
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
        if fast is not None:
            if len(_by_kwargs) >= 256:  # e.g. a NaN value never matches itself: stay bounded
                _by_kwargs.clear()
            _by_kwargs[fast] = scorer
        return scorer


class _Rows:
    """What every sample of one call shares: the reward kwargs, read once.

    ``compute_score_batch`` builds one for the whole batch, so the per-sample work is the
    row itself (veRL passes the same kwargs to every sample).
    """

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        by_source = kwargs.get("verifiers_by_source") or {}
        self.by_source: Mapping[Any, Any] = by_source if isinstance(by_source, Mapping) else {}
        self.verifier = kwargs.get("verifier")
        self.spec = kwargs.get("spec")
        self._defaults: dict[Any, TaskDefaults] = {}
        self._metadata: dict[str, dict[str, str]] = {}

    def defaults(self, data_source: Any) -> TaskDefaults:
        verifier = self.verifier
        if data_source in self.by_source:
            verifier = self.by_source[data_source]
        try:
            return self._defaults[verifier]
        except (KeyError, TypeError):  # TypeError: an unhashable verifier value
            defaults = TaskDefaults(verifier=verifier, spec=self.spec)
            try:
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
        info = extra_info if isinstance(extra_info, Mapping) else {}
        task: Any = MISSING
        reference: Any = ground_truth
        if info.get("task") is not None:
            task = info["task"]
        elif isinstance(ground_truth, Mapping) and (
            "verifier" in ground_truth or "checks" in ground_truth
        ):
            task, reference = dict(ground_truth), MISSING
        if task is MISSING and self.defaults(data_source).verifier is None:
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
            metadata = self._metadata[source] = {"data_source": source}
        return make_item(
            completion=solution_str,
            prompt=prompt if isinstance(prompt, str) else None,
            task=task,
            reference=reference,
            id=row_id,
            metadata=metadata,
            defaults=self.defaults(data_source),
        )


def _item(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> dict[str, Any] | Result:
    return _Rows(kwargs).item(data_source, solution_str, ground_truth, extra_info)


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


def _score_dicts(results: Sequence[Result], kwargs: Mapping[str, Any]) -> list[dict[str, float]]:
    """:func:`score_dict` for each result, reading ``kwargs`` once."""
    invalid, names = _invalid(kwargs), _components(kwargs)
    return [_score_dict(r, invalid, names) for r in results]


def _score_dict(result: Result, invalid: float, names: Sequence[str]) -> dict[str, float]:
    reward = result_reward(result)
    out: dict[str, float] = {"score": invalid if reward is None else float(reward)}
    out.update(extra_values(result, names))
    return out


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
    _invalid(kwargs)  # a configuration that can only answer NaN fails on the first call
    item = _item(data_source, solution_str, ground_truth, extra_info, kwargs)
    result = _scorer(kwargs).score([item])[0]
    return score_dict(result, kwargs)


async def compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """:func:`compute_score` for veRL's async reward loop: awaits without blocking it."""
    _invalid(kwargs)
    item = _item(data_source, solution_str, ground_truth, extra_info, kwargs)
    result = (await _scorer(kwargs).score_async([item]))[0]
    return score_dict(result, kwargs)


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
    _invalid(kwargs)
    rows = _Rows(kwargs)
    items = [
        rows.item(ds, sol, gt, info)
        for ds, sol, gt, info in zip(data_sources, solution_strs, ground_truths, infos, strict=True)
    ]
    return _score_dicts(_scorer(kwargs).score(items), kwargs)


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
