"""The hostile finance corpus (``datasets/finance/attacks.jsonl``) with honest controls.

Families: ``abstain`` (model text that used to make the verifier error: must be ``fail``),
``noref`` (no reference: a computation over figures the question does not ask about earns
nothing), ``dependence`` (a figure the computation discards, hides or restates earns no
``consistency``), ``slowdown`` (the answer scan stays linear: generated completions, decode
work measured), ``control`` (honest answers that must keep passing).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from finance_helpers import TABLE
from verifiers.domains.finance import _answer

import verifiers

CORPUS = Path(__file__).parents[3] / "datasets" / "finance" / "attacks.jsonl"
LINES = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def _completion(answer: Any) -> str:
    if isinstance(answer, str):
        return "My work.\n```json\n" + answer + "\n```"
    recipe = answer.get("recipe")
    if recipe is None:
        return "My work.\n```json\n" + json.dumps(answer) + "\n```"
    if recipe == "padded_cite":
        # An honest answer whose first citation's row label ends in ``size`` characters of
        # ``pad`` (label normalisation must stay linear in it).
        padded = json.loads(json.dumps(answer["answer"]))
        first = next(iter(padded["operands"].values()))
        first["cite"]["row"] += answer["pad"] * (int(answer["size"]) // len(answer["pad"])) + "x"
        return "My work.\n```json\n" + json.dumps(padded) + "\n```"
    depth, size = int(answer["depth"]), int(answer["size"])
    blob = '"' + "x" * size + '"'
    if recipe == "nested":
        return '{"a":' * depth + blob + "}" * depth
    if recipe == "nested_arrays":
        return '{"a":[' * depth + blob + "]}" * depth
    if recipe == "unterminated":
        return '{"a": "' * depth + "x" * size
    if recipe == "fenced":
        return "```json\n" + '{"a":' * depth + blob + "}" * depth + "\n```"
    raise AssertionError(f"unknown recipe {recipe}")


def _trajectory(line: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": line["id"],
        "prompt": line["prompt"],
        "completion": _completion(line["answer"]),
        "task": {
            "verifier": "finance.formula",
            "spec": {"document": {"table": TABLE}, **line["spec"]},
            "reference": line["reference"],
        },
    }


def test_corpus_covers_every_family() -> None:
    families = {line["family"] for line in LINES}
    assert families == {"abstain", "noref", "dependence", "slowdown", "control"}
    assert len({line["id"] for line in LINES}) == len(LINES)


class _CountingDecoder(json.JSONDecoder):
    """Counts the characters each candidate decode read (what the scan budget charges)."""

    read = 0

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        try:
            value, end = super().raw_decode(s, idx)
        except json.JSONDecodeError as exc:
            _CountingDecoder.read += max(1, exc.pos - idx)
            raise
        _CountingDecoder.read += end - idx
        return value, end


@pytest.mark.parametrize("line", LINES, ids=[line["id"] for line in LINES])
def test_attack_gets_its_verdict(line: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    expected = line["expected"]
    traj = _trajectory(line)
    if "max_decoded_factor" in expected:
        monkeypatch.setattr(_answer, "_DECODER", _CountingDecoder(parse_float=_answer.Decimal))
        _CountingDecoder.read = 0
    started = time.monotonic()
    [result] = verifiers.score([traj])
    took = time.monotonic() - started
    assert result.status != "error", (result.error, result.feedback)
    if "max_seconds" in expected:
        assert took < expected["max_seconds"], took
    if "status" in expected:
        statuses = (
            expected["status"] if isinstance(expected["status"], list) else [expected["status"]]
        )
        assert result.status in statuses, (result.status, result.feedback)
    if "reward_max" in expected:
        assert result.reward is not None and result.reward <= expected["reward_max"], (
            result.reward,
            result.components,
            result.feedback,
        )
    if "component_zero" in expected:
        assert result.components[expected["component_zero"]] == 0.0, result.feedback
    if "max_decoded_factor" in expected:
        limit = expected["max_decoded_factor"] * len(traj["completion"]) + (1 << 20)
        assert _CountingDecoder.read <= limit, (_CountingDecoder.read, len(traj["completion"]))
