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


def _scorer(kwargs: Mapping[str, Any]) -> Scorer:
    """One process-wide scorer per distinct engine configuration."""
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


def _item(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> dict[str, Any] | Result:
    info = extra_info if isinstance(extra_info, Mapping) else {}
    by_source = kwargs.get("verifiers_by_source") or {}
    verifier = kwargs.get("verifier")
    if isinstance(by_source, Mapping) and data_source in by_source:
        verifier = by_source[data_source]
    defaults = TaskDefaults(verifier=verifier, spec=kwargs.get("spec"))
    task: Any = MISSING
    reference: Any = ground_truth
    if info.get("task") is not None:
        task = info["task"]
    elif isinstance(ground_truth, Mapping) and (
        "verifier" in ground_truth or "checks" in ground_truth
    ):
        task, reference = dict(ground_truth), MISSING
    row_id = info.get("id", info.get("index"))
    return make_item(
        completion=solution_str,
        prompt=info.get("prompt") if isinstance(info.get("prompt"), str) else None,
        task=task,
        reference=reference,
        id=row_id,
        metadata={"data_source": str(data_source)},
        defaults=defaults,
    )


def score_dict(result: Result, kwargs: Mapping[str, Any]) -> dict[str, float]:
    """The dict veRL receives for one result (see the module docstring)."""
    invalid = float(kwargs.get("invalid_score", math.nan))
    reward = result_reward(result)
    out: dict[str, float] = {
        "score": invalid if reward is None else float(reward),
        "valid": 0.0 if reward is None else 1.0,
    }
    fixed: Sequence[str] | None = kwargs.get("components")
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
    items = [
        _item(ds, sol, gt, info, kwargs)
        for ds, sol, gt, info in zip(data_sources, solution_strs, ground_truths, infos, strict=True)
    ]
    return [score_dict(r, kwargs) for r in _scorer(kwargs).score(items)]
