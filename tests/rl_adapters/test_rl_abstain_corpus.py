"""Model-controlled text through every adapter: a score stays a score, the keys stay fixed.

The corpus (datasets/adapters/abstain.jsonl) holds responses a policy under RL could write to
turn a certain 0 into an abstain (text shaped like a task, a result or an error; NaN and inf;
end tokens; NUL bytes, lone surrogates, bidi controls), or to break the trainer's batching
(log key names as text; long and deeply nested text). Each row states the status the
engine gives it; every adapter must hand its trainer that same verdict: the same reward, a
finite value, ``valid`` 1, and the run's fixed key set.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
import rl_helpers  # noqa: F401
from verifiers.rl_adapters import verl as verl_adapter
from verifiers.rl_adapters._extra import extra_keys
from verifiers.rl_adapters.openrlhf import make_reward_func
from verifiers.rl_adapters.trl import TRLRewards

from verifiers import EngineSettings
from verifiers.data import iter_jsonl

ROWS = list(iter_jsonl("adapters", "abstain.jsonl"))
PROMPT = "Q: what is 6*7? A:"
TASK = {"verifier": "answer.numeric", "reference": 42}
SETTINGS = EngineSettings(sandbox="none", workers=1, cache=False)
KEYS = ("score", *extra_keys(()))
VERL_KWARGS: dict[str, Any] = {
    "verifier": "answer.numeric",
    "sandbox": "none",
    "workers": 1,
    "invalid_score": -1.0,  # never used here: every row of the corpus is judged
}


@pytest.fixture(scope="module")
def trl() -> Any:
    with TRLRewards(verifier="answer.numeric", asynchronous=False, settings=SETTINGS) as r:
        yield r


@pytest.fixture(scope="module")
def orlhf() -> Any:
    fn = make_reward_func(
        verifier="answer.numeric", group_size=4, settings=SETTINGS, machine_concurrency=None
    )
    yield fn
    fn.scorer.close()


def _reward(status: str) -> float:
    return 1.0 if status == "pass" else 0.0


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_adapter_keeps_the_verdict(row: dict[str, Any], trl: Any, orlhf: Any) -> None:
    expected = _reward(row["expect"])
    completion = row["completion"]
    # TRL
    out = trl.funcs[0](prompts=[PROMPT], completions=[completion], reference=["42"])
    assert out == [expected]
    # veRL (veRL's default managers call compute_score / compute_score_async per sample)
    got = verl_adapter.compute_score("x", completion, "42", None, **VERL_KWARGS)
    assert tuple(got) == KEYS and got["score"] == expected and got["verifiers_valid"] == 1.0
    got_async = asyncio.run(
        verl_adapter.compute_score_async("x", completion, "42", {}, **VERL_KWARGS)
    )
    assert got_async == got
    # the task in extra_info as a JSON string (the row's own task; no ground truth)
    info = {"task": json.dumps(TASK), "index": 0}
    got_task = verl_adapter.compute_score("x", completion, None, info, **VERL_KWARGS)
    assert got_task == got
    # OpenRLHF file mode: the query is prompt + response (+ the tokenizer's end token)
    res = orlhf([PROMPT + completion + "</s>"], [PROMPT], ["42"])
    assert res["rewards"].tolist() == [expected] and res["scores"].tolist() == [expected]
    assert tuple(res["extra_logs"]) == KEYS[1:]
    assert res["extra_logs"]["verifiers_valid"].tolist() == [1.0]
    assert all(math.isfinite(v) for t in res["extra_logs"].values() for v in t.tolist())
