"""OpenRLHF file mode, loaded the way OpenRLHF loads ``--remote_rm_url file.py``.

OpenRLHF (openrlhf/utils/agent.py ``SingleTurnAgentExecutor``) does
``importlib.util.spec_from_file_location("reward_func", path)``, ``exec_module``, takes
``module.reward_func`` and calls it through ``asyncio.to_thread(reward_func, queries, prompts,
labels)`` with batches of one; it reads ``rewards``, ``scores`` and ``extra_logs`` (taking
``value.flatten()[0].item()`` of each log tensor).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
from typing import Any

import pytest
import rl_helpers  # noqa: F401
import verifiers.rl_adapters.openrlhf as openrlhf_module
from verifiers.rl_adapters.openrlhf import response_text


def _load_like_openrlhf() -> Any:
    spec = importlib.util.spec_from_file_location("reward_func", openrlhf_module.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reward_func


@pytest.mark.rl
def test_file_mode_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv("VERIFIERS_VERIFIER", "answer.numeric")
    monkeypatch.setenv("VERIFIERS_SANDBOX", "none")
    monkeypatch.setenv("VERIFIERS_INVALID_SCORE", "-1")  # no group size here
    reward_func = _load_like_openrlhf()
    queries = [
        "<s>Q: 1+1? A: 2</s>",
        "<s>Q: 1+1? A: 3</s>",
        "<s>Q: z A: has 5<|im_end|>",
        "<s>Q: w A: 1",
    ]
    prompts = ["<s>Q: 1+1? A:", "<s>Q: 1+1? A:", "<s>Q: z A:", "<s>Q: w A:"]
    labels = [
        "2",
        "2",
        json.dumps({"verifier": "rltest.contains", "reference": "5"}),
        '{"verifier": "bad.name"}',
    ]

    async def like_openrlhf() -> list[dict[str, Any]]:
        return list(
            await asyncio.gather(
                *(
                    asyncio.to_thread(reward_func, [q], [p], [lab])
                    for q, p, lab in zip(queries, prompts, labels, strict=True)
                )
            )
        )

    outs = asyncio.run(like_openrlhf())
    rewards = [o["rewards"].flatten()[0].item() for o in outs]
    assert rewards == [1.0, 0.0, 1.0, -1.0]
    assert all(
        isinstance(o["rewards"], torch.Tensor) and o["rewards"].dtype == torch.float32 for o in outs
    )
    assert [o["extra_logs"]["verifiers_valid"].flatten()[0].item() for o in outs] == [
        1.0,
        1.0,
        1.0,
        0.0,
    ]
    # one batch call as well
    batch = reward_func(queries, prompts, labels)
    assert batch["rewards"].shape == (4,) and batch["scores"][:3].tolist() == [1.0, 0.0, 1.0]


@pytest.mark.rl
def test_make_reward_func_with_invalid_score() -> None:
    from verifiers.rl_adapters.openrlhf import make_reward_func

    from verifiers import EngineSettings

    fn = make_reward_func(
        verifier="rltest.contains",
        invalid_score=-1.0,
        components=["hit"],
        settings=EngineSettings(sandbox="none"),
    )
    out = fn(["P x9", "Q y"], ["P", "Q"], ["9", None])
    assert out["rewards"].tolist() == [1.0, -1.0]  # second: no reference, no judged peer
    assert out["extra_logs"]["hit"].tolist() == [1.0, 0.0]  # log keys stay finite
    assert out["extra_logs"]["verifiers_valid"].tolist() == [1.0, 0.0]
    assert out["extra_logs"]["verifiers_skipped"].tolist() == [0.0, 1.0]
    # the same prompt's judged peers in the call: the unjudged one takes their mean
    out = fn(["P x9", "P y", "P z"], ["P", "P", "P"], ["9", "y", None])
    assert out["rewards"].tolist() == [1.0, 1.0, 1.0]
    out = fn(["P x9", "P y", "P z"], ["P", "P", "P"], ["9", "q", None])
    assert out["rewards"].tolist() == [1.0, 0.0, 0.5]
    fn.scorer.close()  # type: ignore[attr-defined]


def test_response_text_cuts_prompt_and_end_tokens() -> None:
    eos = ("</s>", "<|im_end|>")
    assert response_text("PROMPT answer</s>", "PROMPT", eos) == " answer"
    assert response_text("<s>PROMPT answer <|im_end|></s>\n", "PROMPT", eos) == " answer"
    assert response_text("no prompt here", "PROMPT", eos) == "no prompt here"
    assert response_text("x", None, eos) == "x"


def _response_text_by_copies(text: str, eos_tokens: tuple[str, ...]) -> str:
    """The definition ``response_text`` keeps (its end-token part), written the plain way: a
    copy per token cut (quadratic in the tail; an oracle for short texts only)."""
    text = text.rstrip()
    stripped = True
    while stripped:
        stripped = False
        text = text.rstrip()
        for token in eos_tokens:
            if token and text.endswith(token):
                text = text[: -len(token)]
                stripped = True
    return text


def test_response_text_strips_as_the_plain_definition_does() -> None:
    import random

    rng = random.Random(21)
    token_sets = [("</s>",), ("</s>", "<|im_end|>"), ("b", "ab"), ("ab", "b"), ("", "x "), ("a",)]
    pieces = ["</s>", "<|im_end|>", "a", "b", "ab", "x", " ", "\n", "\u3000", "\x85", "y"]
    for _ in range(3000):
        tokens = rng.choice(token_sets)
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        assert response_text(text, None, tokens) == _response_text_by_copies(text, tokens), (
            text,
            tokens,
        )


def test_response_text_is_linear_in_a_tail_of_end_tokens() -> None:
    """A completion ending in 300k end tokens (and whitespace between them) is cut in well
    under a second: cutting a copy per token took O(n^2) (tens of seconds here)."""
    import time

    eos = ("</s>", "<|im_end|>")
    tail = "answer" + "</s> <|im_end|>\n" * 150_000
    started = time.process_time()
    assert response_text("P " + tail, "P", eos) == " answer"
    assert time.process_time() - started < 3.0


@pytest.mark.rl
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "no group size: set VERIFIERS_GROUP_SIZE"),
        ({"group_size": 1}, "a group of one has no judged peer"),
        ({"invalid_score": math.nan}, "must be a finite number"),
        ({"invalid_score": -math.inf}, "must be a finite number"),
    ],
)
def test_configs_that_could_only_answer_nan_are_refused(kwargs: dict[str, Any], match: str) -> None:
    """OpenRLHF normalises over the rollout batch: one NaN voids the iteration. Without a
    group size there is no zero-advantage value, so the function is not built at all."""
    from verifiers.rl_adapters.openrlhf import make_reward_func

    from verifiers.errors import InvalidSettings

    with pytest.raises(InvalidSettings, match=match):
        make_reward_func(verifier="rltest.contains", **kwargs)


@pytest.mark.rl
def test_env_file_refuses_at_the_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.errors import InvalidSettings

    monkeypatch.setenv("VERIFIERS_VERIFIER", "answer.numeric")
    monkeypatch.setenv("VERIFIERS_SANDBOX", "none")
    for name in ("VERIFIERS_GROUP_SIZE", "VERIFIERS_INVALID_SCORE"):
        monkeypatch.delenv(name, raising=False)
    reward_func = _load_like_openrlhf()
    with pytest.raises(InvalidSettings, match="VERIFIERS_GROUP_SIZE .*n_samples_per_prompt"):
        reward_func(["P 2"], ["P"], ["2"])


@pytest.mark.rl
def test_plain_label_without_a_verifier_is_an_error_not_nan() -> None:
    """The label column is the dataset's: with no default verifier every plain label would
    be unjudged on every step (it was a silent NaN, then a warning)."""
    from verifiers.rl_adapters.openrlhf import make_reward_func

    from verifiers import EngineSettings
    from verifiers.errors import InvalidSettings

    fn = make_reward_func(group_size=2, settings=EngineSettings(sandbox="none"))
    try:
        with pytest.raises(
            InvalidSettings, match="label 0 is a plain reference.*VERIFIERS_VERIFIER"
        ):
            fn(["P x9"], ["P"], ["9"])
        task = json.dumps({"verifier": "rltest.contains", "reference": "9"})
        assert fn(["P x9"], ["P"], [task])["rewards"].tolist() == [1.0]  # tasks need none
    finally:
        fn.scorer.close()  # type: ignore[attr-defined]
