"""veRL reward functions: ``compute_score`` for ``custom_reward_function``.

veRL loads a custom reward function with ``custom_reward_function.path`` (a file path or
``pkg://module``) and ``custom_reward_function.name``, and merges
``custom_reward_function.reward_kwargs`` into every call (those take precedence). Point it
here::

    custom_reward_function.path=pkg://verifiers.rl_adapters.verl
    custom_reward_function.name=compute_score          # or compute_score_async, compute_score_batch
    +custom_reward_function.reward_kwargs.verifier=answer.numeric

(``path=$(python -c 'import verifiers.rl_adapters.verl as m; print(m.__file__)')`` works too:
this module uses absolute imports so it can be loaded from its file.)

What is judged: the task comes from ``extra_info["task"]`` (dict or JSON string), else from a
``ground_truth`` that is itself a task dict, else from the ``verifier``/``spec`` reward kwargs
(or ``verifiers_by_source``, a ``data_source -> verifier`` map) with ``ground_truth`` as the
reference.

The return value is a dict, as veRL expects: ``score`` (the reward veRL optimises),
``valid`` (1.0, or 0.0 when the verifier could not judge or abstained) and one key per
component. veRL has no per-sample abstain, so an unscorable sample gets
``score = invalid_score``: NaN unless told. A NaN reward makes veRL skip that update (its
actors drop steps with a non-finite grad norm), which is loud and safe; set
``reward_kwargs.invalid_score=0.0`` only if you filter on ``valid`` yourself. veRL stacks every
key of the dict across samples, so every sample returns the same keys: pass
``reward_kwargs.components=[...]`` to fix the component set (missing ones are
``invalid_score``); otherwise each sample reports its own result's components.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.rl_adapters._rows import MISSING, TaskDefaults, make_item, result_reward
from verifiers.rl_adapters._scorer import MachineConcurrency, Scorer

from verifiers.engine import EngineSettings
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
        row_id = info.get("id", info.get("index"))
        prompt = info.get("prompt")
        return make_item(
            completion=solution_str,
            prompt=prompt if isinstance(prompt, str) else None,
            task=task,
            reference=reference,
            id=row_id,
            metadata={"data_source": str(data_source)},
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
    return _score_dict(
        result, float(kwargs.get("invalid_score", math.nan)), kwargs.get("components")
    )


def _score_dicts(results: Sequence[Result], kwargs: Mapping[str, Any]) -> list[dict[str, float]]:
    """:func:`score_dict` for each result, reading ``kwargs`` once."""
    invalid = float(kwargs.get("invalid_score", math.nan))
    fixed: Sequence[str] | None = kwargs.get("components")
    return [_score_dict(r, invalid, fixed) for r in results]


def _score_dict(result: Result, invalid: float, fixed: Sequence[str] | None) -> dict[str, float]:
    reward = result_reward(result)
    out: dict[str, float] = {
        "score": invalid if reward is None else float(reward),
        "valid": 0.0 if reward is None else 1.0,
    }
    names = list(fixed) if fixed is not None else sorted(result.components)
    for name in names:
        value = result.components.get(name)
        out[name] = invalid if (reward is None or value is None) else float(value)
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
            ``components``, ``invalid_score``, any :class:`~verifiers.EngineSettings` field
            (``concurrency``, ``timeout_s``, ``sandbox`` ...), ``machine_concurrency``.

    Returns:
        ``{"score", "valid", **components}``.
    """
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
    infos: Sequence[Mapping[str, Any] | None] = extra_infos or [None] * len(solution_strs)
    rows = _Rows(kwargs)
    items = [
        rows.item(ds, sol, gt, info)
        for ds, sol, gt, info in zip(data_sources, solution_strs, ground_truths, infos, strict=True)
    ]
    return _score_dicts(_scorer(kwargs).score(items), kwargs)
