"""The verdict logic on worker reports, without Blender (fabricated reports, real PNG decoding)."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np
import pytest
from PIL import Image
from verifiers.domains.render import RenderSpec
from verifiers.domains.render._checks import evaluate, no_script_result
from verifiers.domains.render._image import image_stats, psnr, ssim


def _png(rgb: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray((np.clip(rgb, 0, 1) * 255).astype(np.uint8)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def _scene_png() -> str:
    rng = np.random.default_rng(0)
    img = np.full((64, 64, 3), 0.4)
    img[20:44, 20:44] = rng.uniform(0.6, 0.9, size=(24, 24, 3))
    return _png(img)


def _obj(
    name: str, kind: str = "MESH", lo: Any = (-1, -1, 0), hi: Any = (1, 1, 1)
) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "location": [0.0, 0.0, 0.5],
        "hide_render": False,
        "matrix_finite": True,
        "verts_finite": True,
        "bbox_min": list(lo),
        "bbox_max": list(hi),
        **({"verts": 8, "faces": 12} if kind == "MESH" else {}),
    }


def _reply(**overrides: Any) -> dict[str, Any]:
    scene = {
        "objects": [_obj("Table"), _obj("Camera", "CAMERA"), _obj("Sun", "LIGHT")],
        "object_count": 3,
        "nonfinite": [],
        "lights": ["Sun"],
        "world": {"exists": False, "emits": False, "strength": 0.0, "color": [0, 0, 0]},
        "emissive_materials": [],
        "missing_images": [],
        "camera": {
            "set": True,
            "type": "CAMERA",
            "finite": True,
            "objects": ["Camera"],
            "sees": ["Table"],
            "rays": 256,
        },
    }
    scene.update(overrides.pop("scene", {}))
    reply: dict[str, Any] = {
        "phase_a": {"how": "exit", "code": 0, "report": {"ok": True, "saved": True}},
        "scene": scene,
        "render": {"ok": True, "png_b64": _scene_png()},
    }
    reply.update(overrides)
    return reply


SPEC = RenderSpec.model_validate(
    {
        "expect": {
            "objects": [
                {
                    "name": "Table",
                    "type": "MESH",
                    "bbox": {"min": [-1, -1, 0], "max": [1, 1, 1], "tol": 0.05},
                }
            ]
        }
    }
)


def test_good_scene_passes_with_every_component() -> None:
    result = evaluate(_reply(), SPEC)
    assert result.status == "pass", result.feedback
    assert result.reward == 1.0
    assert set(result.components) == {
        "script",
        "finite",
        "camera",
        "camera_view",
        "lights",
        "textures",
        "objects",
        "object:Table",
        "render",
        "not_blank",
        "not_black",
        "magenta",
    }
    assert base64.b64decode(result.details["png_base64"]).startswith(b"\x89PNG")


def test_exception_feedback_shows_the_scripts_frames() -> None:
    reply = _reply(
        phase_a={
            "how": "exit",
            "code": 0,
            "report": {
                "ok": False,
                "saved": True,
                "error": {
                    "type": "ZeroDivisionError",
                    "message": "division by zero",
                    "frames": [{"line": 4, "func": "f", "text": "return 1/0"}],
                },
            },
        }
    )
    result = evaluate(reply, SPEC)
    assert result.status == "fail" and result.reward == 0.0
    assert "line 4, in f: return 1/0" in result.feedback
    assert "ZeroDivisionError: division by zero" in result.feedback
    assert result.components["render"] == 0.0


@pytest.mark.parametrize(
    ("phase_a", "needle"),
    [
        ({"how": "timeout", "code": 0}, "timed out after 60s"),
        ({"how": "signal", "code": 6}, "SIGABRT"),
        ({"how": "exit", "code": 0}, "before the scene was saved"),
    ],
)
def test_script_process_failures_gate_to_zero(phase_a: dict[str, Any], needle: str) -> None:
    result = evaluate(_reply(phase_a=phase_a), SPEC)
    assert result.reward == 0.0 and result.status == "fail"
    assert needle in result.feedback


def test_missing_camera_is_a_gate() -> None:
    reply = _reply(
        scene={"camera": {"set": False, "objects": []}},
        render={"ok": False, "skipped": True, "error": "no camera to render from"},
    )
    result = evaluate(reply, SPEC)
    assert result.reward == 0.0
    assert "no camera" in result.feedback


def test_unset_scene_camera_is_named() -> None:
    reply = _reply(
        scene={"camera": {"set": False, "objects": ["Cam"]}},
        render={"ok": False, "skipped": True, "error": "no camera to render from"},
    )
    assert "Cam exist but bpy.context.scene.camera is not set" in evaluate(reply, SPEC).feedback


def test_no_lights_is_partial_with_counts() -> None:
    result = evaluate(_reply(scene={"lights": []}), SPEC)
    assert result.status == "fail"
    assert result.reward is not None and 0 < result.reward < 1
    assert "found 0 light(s) with energy > 0 (need 1)" in result.feedback


def test_world_emission_counts_as_a_light() -> None:
    world = {"exists": True, "emits": True, "strength": 1.0, "color": [0.5, 0.5, 0.5]}
    assert evaluate(_reply(scene={"lights": [], "world": world}), SPEC).components["lights"] == 1.0


def test_black_and_blank_images_fail_with_measurements() -> None:
    reply = _reply(render={"ok": True, "png_b64": _png(np.zeros((64, 64, 3)))})
    result = evaluate(reply, SPEC)
    assert result.components["not_black"] == 0.0 and result.components["not_blank"] == 0.0
    assert "mean luminance 0.0000" in result.feedback


def test_magenta_fraction_is_measured() -> None:
    img = np.full((64, 64, 3), 0.5)
    img[:32, :, :] = [0.8, 0.0, 0.8]
    result = evaluate(_reply(render={"ok": True, "png_b64": _png(img)}), SPEC)
    assert result.components["magenta"] == 0.0
    assert "50.0% of pixels are missing-texture magenta" in result.feedback


def test_undecodable_render_is_a_gate() -> None:
    reply = _reply(render={"ok": True, "png_b64": base64.b64encode(b"not a png").decode()})
    result = evaluate(reply, SPEC)
    assert result.reward == 0.0 and "does not decode" in result.feedback


def test_nonfinite_scene_is_a_gate() -> None:
    result = evaluate(_reply(scene={"nonfinite": ["Table"]}), SPEC)
    assert result.reward == 0.0 and "non-finite (NaN/inf)" in result.feedback


def test_bbox_mismatch_reports_measured_and_expected() -> None:
    reply = _reply(scene={"objects": [_obj("Table", hi=(1, 1, 0.5))]})
    result = evaluate(reply, SPEC)
    assert result.components["object:Table"] == 0.0
    assert "max (1.00, 1.00, 0.50)" in result.feedback and "off by 0.500" in result.feedback


def test_glob_count_and_position_expectations() -> None:
    spec = RenderSpec.model_validate(
        {
            "expect": {
                "objects": [
                    {"name": "Leg*", "count": 4},
                    {"name": "Leg1", "position": [0, 0, 0.5], "position_tol": 0.01},
                ]
            }
        }
    )
    objects = [_obj(f"Leg{i}") for i in range(1, 4)]
    result = evaluate(_reply(scene={"objects": objects}), spec)
    assert "expected 4 object(s) 'Leg*', found 3" in result.feedback
    assert result.components["object:Leg1"] == 1.0


def test_hidden_and_empty_objects_do_not_count() -> None:
    # Four legs faked by one real leg, an empty mesh, and two hidden stand-ins.
    spec = RenderSpec.model_validate({"expect": {"objects": [{"name": "Leg*", "count": 4}]}})
    empty = {**_obj("Leg2"), "verts": 0, "faces": 0}
    hidden = [{**_obj(f"Leg{i}"), "hide_render": True} for i in (3, 4)]
    result = evaluate(_reply(scene={"objects": [_obj("Leg1"), empty, *hidden]}), spec)
    assert result.components["object:Leg*"] == 0.0
    assert "found 1" in result.feedback
    real = [{**_obj(f"Leg{i}"), "verts": 8} for i in range(1, 5)]
    assert evaluate(_reply(scene={"objects": real}), spec).components["object:Leg*"] == 1.0


def test_missing_image_files_are_listed() -> None:
    reply = _reply(scene={"missing_images": [{"image": "wood", "filepath": "//wood.png"}]})
    result = evaluate(reply, SPEC)
    assert "image file(s) missing: 'wood' -> //wood.png" in result.feedback


def test_exr_check_counts_nonfinite_pixels() -> None:
    spec = RenderSpec.model_validate({"exr_check": True})
    reply = _reply(
        render={"ok": True, "png_b64": _scene_png(), "exr": {"pixels": 4096, "nonfinite": 3}}
    )
    result = evaluate(reply, spec)
    assert result.components["exr"] == 0.0 and "3 NaN/inf" in result.feedback


def test_reference_similarity() -> None:
    spec = RenderSpec.model_validate({"reference_image": {"path": "ref.png", "min_psnr": 30}})
    reply = _reply()
    rgb = (
        np.asarray(
            Image.open(io.BytesIO(base64.b64decode(reply["render"]["png_b64"]))).convert("RGB")
        )
        / 255.0
    )
    assert evaluate(reply, spec, rgb).components["reference"] == 1.0
    other = np.clip(rgb + 0.3, 0, 1)
    result = evaluate(reply, spec, other)
    assert result.components["reference"] == 0.0 and "PSNR" in result.feedback


def test_image_metrics() -> None:
    a = np.random.default_rng(1).uniform(size=(32, 32, 3))
    assert psnr(a, a) == float("inf")
    assert ssim(a, a) == pytest.approx(1.0)
    assert ssim(a, 1 - a) < 0.2
    stats = image_stats(np.zeros((8, 8, 3)))
    assert stats.mean_luminance == 0.0 and stats.magenta_fraction == 0.0


def test_no_script_fails_with_all_components_zero() -> None:
    result = no_script_result(SPEC, "no ```python code block")
    assert result.status == "fail" and result.reward == 0.0
    assert result.components and not any(result.components.values())


def test_mesh_component_is_the_share_of_mesh_checks_passed() -> None:
    spec = RenderSpec.model_validate({"mesh": {"constraints": {"bodies": 1}}})
    answer = {
        "gate": {"passed": True},
        "checks": [
            {"name": "bodies", "passed": False, "message": "2 separate bodies, expected 1"},
            {"name": "bbox", "passed": True, "message": "ok"},
        ],
    }
    result = evaluate(_reply(), spec, None, answer)
    assert result.components["mesh"] == 0.5
    assert "mesh: 2 separate bodies, expected 1" in result.feedback
    gate = evaluate(_reply(), spec, None, {"gate": {"passed": False, "reason": "not watertight"}})
    assert gate.components["mesh"] == 0.0 and "mesh: not watertight" in gate.feedback
    missing = evaluate(_reply(), spec, None, None)
    assert missing.components["mesh"] == 0.0


def test_geometry_without_renderable_faces_never_counts() -> None:
    # Loose vertices / edges only (faces: 0) match neither min_objects nor an expectation,
    # and the camera "seeing" such an object does not count as seeing the scene.
    loose = {**_obj("Table"), "verts": 2, "faces": 0}
    spec = RenderSpec.model_validate(
        {**SPEC.model_dump(), "expect": {**SPEC.expect.model_dump(), "min_objects": 1}}
    )
    result = evaluate(_reply(scene={"objects": [loose]}), spec)
    assert result.components["objects"] == 0.0
    assert result.components["object:Table"] == 0.0
    assert result.components["camera_view"] == 0.0
    assert result.status == "fail"


@pytest.mark.parametrize("gate", ["not_black", "not_blank", "camera_view", "objects", "textures"])
def test_gates_make_a_component_fatal(gate: str) -> None:
    black = _png(np.zeros((64, 64, 3)))
    reply = _reply(
        render={"ok": True, "png_b64": black},
        scene={
            "objects": [],
            "camera": {"set": True, "type": "CAMERA", "finite": True, "sees": [], "rays": 256},
            "missing_images": [{"image": "wood", "filepath": "//wood.png"}],
        },
    )
    partial = evaluate(reply, SPEC)
    assert partial.components[gate] == 0.0 and partial.reward > 0.0  # default: partial credit
    spec = RenderSpec.model_validate(
        {**SPEC.model_dump(), "gates": ["script", "finite", "camera", "render", gate]}
    )
    fatal = evaluate(reply, spec)
    assert fatal.reward == 0.0 and fatal.status == "fail"
    assert fatal.details["checks"][gate]["gate"] is True


def test_gates_must_name_components_and_keep_the_structural_ones() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not components of this spec"):
        RenderSpec.model_validate({"gates": ["script", "finite", "camera", "render", "nope"]})
    with pytest.raises(ValidationError, match="gates must include"):
        RenderSpec.model_validate({"gates": ["not_black"]})
    assert RenderSpec().gates == ["script", "finite", "camera", "render"]
