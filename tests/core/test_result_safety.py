"""Two promises at the result boundary (issue 12).

1. A failure the model's output caused is the model's ``fail`` (reward 0), never an ``error``:
   a verifier says so by raising :class:`~verifiers.InvalidOutput`, from ``verify``, from an
   inline ``check`` or from a worker process, and the rule holds inside ``task.checks`` for a
   required gate, an ungated check and ``combine="min"``.
2. Results always serialise: model text with a lone surrogate in ``feedback``/``details`` is
   written (escaped) by the CLI, stored by the cache and answered by the reward server, and
   never turns the line, or the batch, into an error.

``coretest.json`` is a test double of the common shape "parse the model's JSON, echo a field":
the way finance answers, tool calls and structured outputs reach feedback and details.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import verifiers
from verifiers import (
    InlineVerifier,
    InvalidOutput,
    Result,
    Spec,
    Trajectory,
    Verifier,
    VerifierContext,
    register,
)
from verifiers.cache import ResultCache
from verifiers.cli import main
from verifiers.io import open_result_writer, read_results
from verifiers.text import completion_text

HERE = Path(__file__).resolve().parent


def _parse(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidOutput(f"the answer is not JSON: {exc}") from None
    if not isinstance(value, dict) or not isinstance(value.get("score"), int | float):
        raise InvalidOutput('the answer must be a JSON object with a numeric "score"')
    return value


class JsonSpec(Spec):
    inline: bool = False
    worker: bool = False


class EchoJson(Verifier[JsonSpec]):
    """Reward = the completion's ``score``; its ``note`` goes to feedback and details."""

    Spec = JsonSpec
    cacheable = True

    async def verify(self, trajectory: Trajectory, spec: JsonSpec, ctx: VerifierContext) -> Result:
        text = completion_text(trajectory)
        if spec.worker:
            await ctx.run_in_worker("_worker_targets:reject", text, timeout=30)
        value = _parse(text)
        note = str(value.get("note", ""))
        return Result.scored(
            min(1.0, max(0.0, float(value["score"]))),
            feedback=f"note: {note}",
            details={"note": note, note: 1},
        )


class EchoJsonInline(InlineVerifier[JsonSpec]):
    Spec = JsonSpec

    def check(self, trajectory: Trajectory, spec: JsonSpec) -> Result:
        value = _parse(completion_text(trajectory))
        return Result.scored(min(1.0, max(0.0, float(value["score"]))))


register("coretest.json")(EchoJson)
register("coretest.json_inline")(EchoJsonInline)


@pytest.fixture(autouse=True)
def _worker_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def traj(completion: str, ident: str = "x", **task: Any) -> dict[str, Any]:
    return {"id": ident, "completion": completion, "task": task}


EXACT_PASS = {"verifier": "answer.exact", "reference": "4"}


# -- 1. the model's output broke the check: a fail ---------------------------------------------


@pytest.mark.parametrize("verifier", ["coretest.json", "coretest.json_inline"])
@pytest.mark.parametrize("completion", ["{not json", "[1, 2]", '{"score": "high"}', ""])
def test_invalid_output_alone_is_a_fail(verifier: str, completion: str) -> None:
    [result] = verifiers.score([traj(completion, verifier=verifier)])
    assert result.status == "fail" and result.reward == 0.0, result
    assert result.error is None
    assert "JSON" in result.feedback


def test_invalid_output_from_a_worker_process_is_a_fail() -> None:
    [result] = verifiers.score(
        [traj('{"score": 1}', verifier="coretest.json", spec={"worker": True})], workers=1
    )
    assert result.status == "fail" and result.reward == 0.0, result
    assert "expected a number" in result.feedback


def _checks(*checks: dict[str, Any], combine: str = "mean", completion: str = "4") -> Result:
    item = {
        "id": "c",
        "completion": completion,
        "task": {"checks": list(checks), "combine": combine},
    }
    [result] = verifiers.score([item])
    return result


@pytest.mark.parametrize("verifier", ["coretest.json", "coretest.json_inline"])
def test_invalid_output_in_a_required_gate_fails_the_item(verifier: str) -> None:
    result = _checks(EXACT_PASS, {"verifier": verifier, "required": True})
    assert result.status == "fail" and result.reward == 0.0, result
    assert result.details["checks"][verifier]["status"] == "fail"


@pytest.mark.parametrize("verifier", ["coretest.json", "coretest.json_inline"])
def test_invalid_output_in_an_ungated_check_counts_as_zero(verifier: str) -> None:
    result = _checks(EXACT_PASS, {"verifier": verifier})
    assert result.status == "fail" and result.reward == 0.5, result
    assert result.components == {"answer.exact": 1.0, verifier: 0.0}


@pytest.mark.parametrize("verifier", ["coretest.json", "coretest.json_inline"])
def test_invalid_output_under_min_is_zero(verifier: str) -> None:
    result = _checks(EXACT_PASS, {"verifier": verifier}, combine="min")
    assert result.status == "fail" and result.reward == 0.0, result


def test_a_task_problem_still_abstains_in_composition() -> None:
    # Controls: what the task author got wrong (no reference, a bad spec) is not the model's.
    for broken in ({"verifier": "answer.exact"}, {**EXACT_PASS, "spec": {"mode": "nope"}}):
        result = _checks(EXACT_PASS, broken)
        assert result.status == "error" and result.reward is None, result
        assert result.error is not None and result.error.kind == "bad_input"


# -- 2. results always serialise ---------------------------------------------------------------

LONE = '{"score": 1, "note": "\\ud800 caf\\u00e9 \\udfff"}'
"""The model wrote JSON escapes of lone surrogates: ``json.loads`` gives a str UTF-8 cannot hold."""


def test_result_json_safe_escapes_lone_surrogates_and_keeps_clean_results() -> None:
    dirty = Result.failed("bad \ud800", details={"k\udfff": ["\ud800", (1, 2), {3}]})
    safe = dirty.json_safe()
    assert safe.feedback == "bad \\ud800"
    assert safe.details == {"k\\udfff": ["\\ud800", [1, 2], [3]]}
    json.loads(safe.model_dump_json())
    clean = Result.failed("café", details={"a": [1, "b"]})
    assert clean.json_safe() is clean


def test_cli_writes_the_verdict_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERIFIERS_CACHE_DIR", str(tmp_path))  # a verdict, not a cached one
    src = tmp_path / "in.jsonl"
    lines = [
        traj(LONE, "lone", verifier="coretest.json"),
        traj("The answer is 4", "ok", **EXACT_PASS),
    ]
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out.jsonl"
    assert main(["score", str(src), "-o", str(out), "-q", "--sandbox", "none"]) == 0
    got = list(read_results(out))
    assert [(r.id, r.status, r.reward) for r in got] == [("lone", "pass", 1.0), ("ok", "pass", 1.0)]
    assert got[0].feedback == "note: \\ud800 café \\udfff"
    out.read_bytes().decode("utf-8")  # strict UTF-8 throughout


def test_writer_never_turns_a_verdict_into_an_error(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    odd = Result.scored(1.0, details={"obj": object()}).model_copy(update={"id": "odd"})
    lone = Result.failed("bad \ud800 text").model_copy(update={"id": "x\ud800"})
    for fmt in ("jsonl", "parquet"):
        path = out.with_suffix(f".{fmt}")
        with open_result_writer(path, fmt=fmt) as writer:  # type: ignore[arg-type]
            writer.write(odd)
            writer.write(lone)
        got = list(read_results(path))
        assert [(r.status, r.reward) for r in got] == [("pass", 1.0), ("fail", 0.0)], fmt
        assert got[1].id == "x\\ud800" and got[1].feedback == "bad \\ud800 text"


def test_cache_stores_a_result_with_lone_surrogates(tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.sqlite"
    item = traj(LONE, "lone", verifier="coretest.json")
    first = verifiers.score([item], cache=cache_path)
    second = verifiers.score([item], cache=cache_path)
    assert first[0].status == second[0].status == "pass"
    assert second[0].cached is True
    assert second[0].feedback == "note: \\ud800 café \\udfff"
    cache = ResultCache(cache_path)
    try:
        assert cache._db.execute("SELECT count(*) FROM results").fetchone()[0] == 1
    finally:
        cache.close()


@pytest.mark.rl
def test_server_answers_the_whole_batch(tmp_path: Path) -> None:
    httpx = pytest.importorskip("httpx")
    sys.path.insert(0, str(HERE.parent / "rl_adapters"))
    from rl_helpers import LiveServer
    from verifiers.rl_adapters.server import ServerSettings

    settings = ServerSettings(
        engine=verifiers.EngineSettings(sandbox="none", workers=1, timeout_s=20)
    )
    body = {
        "trajectories": [
            traj("The answer is 4", "honest", **EXACT_PASS),
            traj(LONE, "lone", verifier="coretest.json"),
            traj("{broken", "broken", verifier="coretest.json"),
        ]
    }
    with LiveServer(settings) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post("/v1/score", json=body)
        assert response.status_code == 200, response.text
        results = response.json()["results"]
        assert [(r["id"], r["status"], r["reward"]) for r in results] == [
            ("honest", "pass", 1.0),
            ("lone", "pass", 1.0),
            ("broken", "fail", 0.0),
        ]
        assert results[1]["feedback"] == "note: \\ud800 café \\udfff"


# -- 3. the fenced-block scan is not quadratic -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```a\n" * 100_000, "```a\n" * 99_999),  # every fence opens, none closes
        ("```py\n" * 50_000 + "```\n", "```py\n" * 49_999),
        ("~~~\nx\n" * 50_000, "x\n"),
    ],
    ids=["all-unclosed", "one-close", "tilde-pairs"],
)
def test_last_code_block_is_fast_on_unclosed_fences(text: str, expected: str) -> None:
    import time

    from verifiers.text import last_code_block

    started = time.perf_counter()
    assert last_code_block(text, "python") == expected
    assert time.perf_counter() - started < 10  # the regex took minutes at this size
