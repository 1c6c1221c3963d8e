"""veRL adapter, loaded the way veRL's ``get_custom_reward_fn`` loads a custom reward function.

veRL (verl/utils/import_utils.py ``load_module``/``load_extern_object``, and
verl/trainer/ppo/reward.py ``get_custom_reward_fn``) does, for ``custom_reward_function.path``
and ``.name``: a ``pkg://a.b`` path is imported by module name; any other path is loaded with
``importlib.util.spec_from_file_location("custom_module_<hash>", path)`` + ``exec_module``;
then ``getattr(module, name)`` is wrapped in ``functools.partial`` that merges
``reward_kwargs`` over the call's kwargs, and its reward managers call it with
``data_source=, solution_str=, ground_truth=, extra_info=`` (awaited when
``inspect.iscoroutinefunction`` says so). The steps are re-done here from that description;
veRL itself (ray, vllm, ...) is not installed in CI.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import inspect
import json
import math
import os
from typing import Any

import pytest
import rl_helpers  # noqa: F401
import verifiers.rl_adapters.verl as verl_module


def _load_like_verl(path: str, name: str, reward_kwargs: dict[str, Any]) -> Any:
    if path.startswith("pkg://"):
        module = importlib.import_module(path[len("pkg://") :].replace("/", "."))
    else:
        spec = importlib.util.spec_from_file_location(
            f"custom_module_{hash(os.path.abspath(path))}", path
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    raw = getattr(module, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        return raw(*args, **{**kwargs, **reward_kwargs})

    async def acall(*args: Any, **kwargs: Any) -> Any:
        return await raw(*args, **{**kwargs, **reward_kwargs})

    return functools.partial(acall if inspect.iscoroutinefunction(raw) else call)


KWARGS = {"verifier": "answer.numeric", "sandbox": "none", "workers": 1, "invalid_score": -1.0}
ZEROS = {
    "verifiers_valid": 0.0,
    "verifiers_pass": 0.0,
    "verifiers_skipped": 0.0,
    "verifiers_error_bad_input": 0.0,
    "verifiers_error_infra": 0.0,
    "verifiers_error_timeout": 0.0,
    "verifiers_error_verifier": 0.0,
}


def keys(**set_: float) -> dict[str, float]:
    return {**ZEROS, **set_}


@pytest.mark.parametrize("path", [verl_module.__file__, "pkg://verifiers.rl_adapters.verl"])
def test_loaded_from_file_and_pkg_path(path: str) -> None:
    fn = _load_like_verl(path, "compute_score", KWARGS)
    assert not inspect.iscoroutinefunction(fn)
    good = fn(
        data_source="gsm8k",
        solution_str="so the answer is 42",
        ground_truth="42",
        extra_info={"index": 3},
    )
    assert good == {"score": 1.0, **keys(verifiers_valid=1.0, verifiers_pass=1.0)}
    wrong = fn(
        data_source="gsm8k", solution_str="the answer is 41", ground_truth="42", extra_info=None
    )
    assert wrong == {"score": 0.0, **keys(verifiers_valid=1.0)}


def test_unscorable_sample_is_flagged_not_zero() -> None:
    fn = _load_like_verl(verl_module.__file__, "compute_score", {**KWARGS, "components": ["hit"]})
    out = fn(
        data_source="x",
        solution_str="42",
        ground_truth="42",
        extra_info={"task": json.dumps({"verifier": "no.such.verifier"})},
    )
    assert out["verifiers_valid"] == 0.0 and out["score"] == -1.0  # the explicit value
    assert out["hit"] == 0.0  # log keys stay finite; only the score is invalid_score
    assert out["verifiers_error_bad_input"] == 1.0
    fn0 = _load_like_verl(verl_module.__file__, "compute_score", {**KWARGS, "invalid_score": 0.0})
    assert fn0(
        data_source="x", solution_str="42", ground_truth="42", extra_info={"task": "{broken"}
    ) == {"score": 0.0, **keys(verifiers_error_bad_input=1.0)}


def test_task_sources_and_components() -> None:
    fn = _load_like_verl(
        "pkg://verifiers.rl_adapters.verl",
        "compute_score",
        {
            "sandbox": "none",
            "verifiers_by_source": {"toy": "rltest.contains"},
            "components": ["hit", "short"],
            "invalid_score": -1.0,
        },
    )
    # extra_info["task"] wins; ground_truth fills its reference
    out = fn(
        data_source="any",
        solution_str="has 7",
        ground_truth="7",
        extra_info={"task": {"verifier": "rltest.contains"}},
    )
    assert out == {
        "score": 1.0,
        **keys(verifiers_valid=1.0, verifiers_pass=1.0),
        "hit": 1.0,
        "short": 1.0,
    }
    # a ground_truth that is a task dict
    out = fn(
        data_source="any",
        solution_str="has 7",
        ground_truth={"verifier": "rltest.contains", "reference": "8"},
    )
    assert out["score"] == 0.0 and out["verifiers_valid"] == 1.0
    # data_source -> verifier map
    assert fn(data_source="toy", solution_str="x 9", ground_truth="9")["score"] == 1.0
    # no task anywhere: a configuration error (test_row_without_any_verifier_is_a_config_error)


def test_async_variant_through_the_partial() -> None:
    fn = _load_like_verl("pkg://verifiers.rl_adapters.verl", "compute_score_async", KWARGS)
    assert inspect.iscoroutinefunction(fn)

    async def run() -> list[dict[str, float]]:
        return list(
            await asyncio.gather(
                *(
                    fn(
                        data_source="d",
                        solution_str=f"answer: {i}",
                        ground_truth="3",
                        extra_info={},
                    )
                    for i in range(6)
                )
            )
        )

    assert [o["score"] for o in asyncio.run(run())] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def test_batch_variant() -> None:
    fn = _load_like_verl("pkg://verifiers.rl_adapters.verl", "compute_score_batch", KWARGS)
    out = fn(
        data_sources=["a", "a", "a"],
        solution_strs=["1", "2", "x"],
        ground_truths=["1", "1", "1"],
        extra_infos=[{}, {}, {"task": "{bad"}],
    )
    assert [o["score"] for o in out[:2]] == [1.0, 0.0]
    assert out[2]["verifiers_valid"] == 0.0


def test_batch_variant_takes_numpy_extra_infos() -> None:
    """veRL hands ``extra_infos`` as a numpy object array; ``arr or [...]`` raised on it."""
    import numpy as np

    fn = _load_like_verl("pkg://verifiers.rl_adapters.verl", "compute_score_batch", KWARGS)
    out = fn(
        data_sources=np.array(["a", "a"], dtype=object),
        solution_strs=["1", "2"],
        ground_truths=np.array(["1", "1"], dtype=object),
        extra_infos=np.array([{}, {}], dtype=object),
    )
    assert [o["score"] for o in out] == [1.0, 0.0]


def test_unknown_component_names_are_refused() -> None:
    fn = _load_like_verl(verl_module.__file__, "compute_score", {**KWARGS, "components": 7})
    with pytest.raises(ValueError, match="reward_kwargs.components"):
        fn(data_source="x", solution_str="1", ground_truth="1")


def test_functions_loaded_from_the_file_pickle() -> None:
    """veRL's ``remote`` manager pickles the reward function into Ray workers; loaded by file
    path (veRL's ``load_extern_object``) it used to be a function of an unimportable module."""
    import pickle

    from verl.utils.import_utils import load_extern_object

    for name in ("compute_score", "compute_score_async", "compute_score_batch"):
        fn = load_extern_object(module_path=verl_module.__file__, object_name=name)
        assert pickle.loads(pickle.dumps(fn)) is getattr(verl_module, name)


@pytest.mark.parametrize("name", ["compute_score", "compute_score_async", "compute_score_batch"])
@pytest.mark.parametrize("invalid", [None, math.nan, math.inf, "0", True])
def test_no_finite_invalid_score_is_refused_on_the_first_call(name: str, invalid: Any) -> None:
    """Under naive/dapo no value gives an unjudged sample zero advantage, and NaN voids the
    step: the run must stop at its first call, even when that sample is judged."""
    from verifiers.errors import InvalidSettings

    kwargs = {k: v for k, v in KWARGS.items() if k != "invalid_score"}
    if invalid is not None:
        kwargs["invalid_score"] = invalid
    fn = _load_like_verl("pkg://verifiers.rl_adapters.verl", name, kwargs)
    one = {"data_source": "x", "solution_str": "42", "ground_truth": "42", "extra_info": None}
    args = {k + "s": [v] for k, v in one.items()} if name.endswith("batch") else one
    with pytest.raises(InvalidSettings, match="invalid_score .*VerifiersRewardManager"):
        out = fn(**args)
        if inspect.isawaitable(out):
            asyncio.run(out)


def test_row_without_any_verifier_is_a_config_error() -> None:
    """No task in the row and no default verifier: every such row would be unjudged, every
    step (it used to be a silent NaN). The dataset's doing, so an error, not an abstain."""
    from verifiers.errors import InvalidSettings

    kwargs = {"sandbox": "none", "invalid_score": 0.0, "verifiers_by_source": {"toy": "x.y"}}
    fn = _load_like_verl("pkg://verifiers.rl_adapters.verl", "compute_score", kwargs)
    with pytest.raises(InvalidSettings, match="data_source 'gsm8k' has no task.*reward_kwargs"):
        fn(data_source="gsm8k", solution_str="42", ground_truth="42", extra_info={})
    # a row that carries its task needs no default
    out = fn(
        data_source="gsm8k",
        solution_str="has 4",
        ground_truth="4",
        extra_info={"task": {"verifier": "rltest.contains"}},
    )
    assert out["score"] == 1.0
