"""verifiers.gates: the one gated-mean rule and gate validation that render.blender,
cad.script and game.godot share."""

from __future__ import annotations

import pytest

from verifiers.gates import CheckOutcome, gated_mean, process_end, untrusted_error, validate_gates


def test_a_failed_gate_zeroes_the_reward_and_keeps_the_components() -> None:
    checks = [CheckOutcome("script", 1.0), CheckOutcome("valid", 0.0, message="not a solid")]
    scored = gated_mean(checks, ["script", "valid", "faces"], ["script", "valid"])
    assert scored.reward == 0.0
    assert scored.components == {"script": 1.0, "valid": 0.0, "faces": 0.0}
    assert scored.lines == ["not a solid"]
    assert scored.checks["valid"] == {"score": 0.0, "gate": True, "ok": False}


def test_the_reward_is_the_mean_of_the_non_gates() -> None:
    checks = [CheckOutcome("script", 1.0), CheckOutcome("a", 1.0), CheckOutcome("b", 0.5)]
    scored = gated_mean(checks, ["script", "a", "b"], ["script"])
    assert scored.reward == pytest.approx(0.75)
    assert gated_mean([CheckOutcome("script", 1.0)], ["script"], ["script"]).reward == 1.0


def test_a_component_never_checked_is_a_zero_reward() -> None:
    # a gate that is not in the spec's gates cannot let unchecked components through
    scored = gated_mean([CheckOutcome("script", 1.0)], ["script", "a"], ["script"])
    assert scored.reward == 0.0


def test_the_spec_decides_which_checks_gate() -> None:
    checks = [CheckOutcome("script", 1.0), CheckOutcome("a", 0.5, gate=True)]
    scored = gated_mean(checks, ["script", "a"], ["script"])
    assert not checks[1].gate and scored.reward == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("names", "gates", "match"),
    [
        (["script", "a", "a"], ["script"], "component names repeat"),
        (["script", "a"], ["script", "b"], "are not components"),
        (["script", "valid"], ["valid"], "gates must include script"),
    ],
)
def test_bad_gates_are_named(names: list[str], gates: list[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        validate_gates(names, gates, ("script", "valid"))


def test_a_structural_gate_outside_the_spec_may_stay_listed() -> None:
    validate_gates(["script"], ["script", "camera"], ("script", "camera"))


class _Run:
    def __init__(self, timed_out: bool, oom: bool, code: int) -> None:
        self.timed_out, self.oom_killed, self.returncode = timed_out, oom, code


@pytest.mark.parametrize(
    ("run", "end"),
    [
        (_Run(True, True, -9), ("timeout", 0)),
        (_Run(False, True, -9), ("oom", -9)),
        (_Run(False, True, 0), ("exit", 0)),
        (_Run(False, False, -11), ("signal", 11)),
        (_Run(False, False, 3), ("exit", 3)),
    ],
)
def test_process_end(run: _Run, end: tuple[str, int]) -> None:
    assert process_end(run) == end


def test_untrusted_error_keeps_known_keys_and_caps_text() -> None:
    raw = {"type": "E" * 500, "message": "\udcff" + "m" * 5000, "frames": [{"line": "7"}] * 9}
    error = untrusted_error(raw)
    assert error is not None
    assert len(error["type"]) == 100 and len(error["message"]) == 1000
    assert len(error["frames"]) == 5 and error["frames"][0]["line"] is None
    assert untrusted_error(["not", "a", "dict"]) is None
