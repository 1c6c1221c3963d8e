"""Pure parts of cad.script: the spec and the scoring of judge measurements."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from verifiers.domains.cad import CadSpec
from verifiers.domains.cad._checks import evaluate


def _reply(**judge: Any) -> dict[str, Any]:
    base = {
        "read": True,
        "solids": 1,
        "faces": 6,
        "edges": 12,
        "valid": True,
        "shells": 1,
        "open_shells": 0,
        "volume": 1000.0,
        "min_solid_volume": 1000.0,
        "bbox": [[0, 0, 0], [10, 10, 10]],
        "holes": [],
        "step": True,
    }
    return {
        "phase_a": {"how": "exit", "code": 0, "report": {"ok": True}},
        "brep": True,
        "judge": {**base, **judge},
    }


SPEC = CadSpec.model_validate(
    {
        "expect": {
            "faces": 6,
            "volume": {"target": 1000},
            "bbox": {"min": [0, 0, 0], "max": [10, 10, 10]},
        }
    }
)


def test_a_good_cube_passes() -> None:
    result = evaluate(_reply(), SPEC, None)
    assert result.status == "pass" and result.reward == 1.0


@pytest.mark.parametrize(
    ("judge", "needle"),
    [
        ({"valid": False}, "not valid"),
        ({"open_shells": 1}, "not closed"),
        ({"solids": 0}, "no solid"),
        ({"solids": 3}, "3 solids, expected 1"),
        ({"min_solid_volume": -5.0}, "inside out"),
        ({"kernel_error": "Standard_Failure: x"}, "could not be inspected"),
        ({"read": False, "read_error": "the part is not a readable B-rep"}, "readable"),
    ],
)
def test_invalid_solids_fail_the_gate(judge: dict[str, Any], needle: str) -> None:
    result = evaluate(_reply(**judge), SPEC, None)
    assert result.status == "fail" and result.reward == 0.0
    assert needle in result.feedback
    assert result.components["valid"] == 0.0


def test_partial_credit_is_the_share_of_soft_checks() -> None:
    result = evaluate(_reply(volume=1200.0, faces=7), SPEC, None)
    # faces 0, volume 0, bbox 1, step 1
    assert result.status == "fail" and result.reward == pytest.approx(0.5)
    assert "faces is 7, expected 6" in result.feedback


def test_a_gated_check_zeroes_the_reward() -> None:
    spec = CadSpec.model_validate(
        {**SPEC.model_dump(exclude_none=True), "gates": ["script", "valid", "volume"]}
    )
    assert evaluate(_reply(volume=1200.0), spec, None).reward == 0.0


def test_script_outcomes() -> None:
    timeout = {"phase_a": {"how": "timeout", "code": 0}, "brep": False}
    assert "longer than 60s" in evaluate(timeout, SPEC, None).feedback
    crash = {"phase_a": {"how": "signal", "code": 11}, "brep": False}
    assert "SIGSEGV" in evaluate(crash, SPEC, None).feedback


def test_spec_validation() -> None:
    with pytest.raises(ValidationError):
        CadSpec.model_validate({"libary": "cadquery"})
    with pytest.raises(ValidationError):
        CadSpec.model_validate({"library": "freecad"})
    with pytest.raises(ValidationError, match="gates must include"):
        CadSpec.model_validate({"gates": ["script"]})
    with pytest.raises(ValidationError, match="repeat"):
        CadSpec.model_validate({"expect": {"holes": [{"diameter": 5}, {"diameter": 5}]}})
    with pytest.raises(ValidationError):
        CadSpec.model_validate({"expect": {"volume": {"target": 1, "abs_tolerance": 1}}})
