"""``mesh.constraints`` plumbing: spec validation, public names, formats, inline artifacts,
the worker-process hop and its limits, and script mode's own logic (fake sandbox)."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import pytest
import trimesh
from pydantic import ValidationError
from verifiers.domains.mesh import MeshConstraints, MeshSpec
from verifiers.sandbox import ExecResult, FakeCall, FakeProvider

import verifiers
from verifiers import Trajectory, VerifierContext


def test_issue_spec_shape_validates() -> None:
    spec = MeshSpec.model_validate(
        {
            "source": "artifact",
            "artifact": "mesh",
            "constraints": {
                "closed": True,
                "extents": {"target": [20, 20, 10], "abs_tol": 0.1, "rel_tol": 0.01},
                "volume": {"target": 3607.0, "rel_tol": 0.02},
                "area": {"target": 1400.0},
                "bodies": 1,
                "genus": 1,
                "max_faces": 200000,
                "mirror_symmetry": {"plane": "yz", "tol": 0.01},
                "min_thickness": 1.0,
                "inside": [[0, 0, 5]],
                "outside": [[0, 0, 50]],
            },
        }
    )
    assert spec.constraints.genus == 1 and spec.constraints.min_thickness == 1.0
    with pytest.raises(ValueError, match="future_option"):  # strict specs (issue 19)
        MeshSpec.model_validate({"future_option": 3})


@pytest.mark.parametrize(
    "constraints",
    [
        {"extents": {"target": [1, 2]}},
        {"extents": {"target": [1, 2, 3], "abs_tolerance": 0.1}},
        {"volume": {}},
        {"units": "furlong", "extents": {"target": [1, 1, 1]}},
        {"units": "mm"},
        {
            "clearance": {
                "obstacles": [{"box": {"min": [0, 0, 0], "max": [1, 1, 1]}, "point": [0, 0, 0]}]
            }
        },
        {"min_thickness": -1},
    ],
)
def test_bad_specs_are_rejected(constraints: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        MeshSpec.model_validate({"constraints": constraints})


def _mesh_item(path: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A ``mesh.constraints`` trajectory judging the file ``path`` with ``spec``."""
    task = {"verifier": "mesh.constraints", "spec": spec}
    return {"completion": "", "task": task, "artifacts": {"mesh": {"path": path}}, **extra}


def _run(traj: dict[str, Any], base: Path, provider: Any = None) -> verifiers.Result:
    t = Trajectory.model_validate(traj)
    spec = MeshSpec.model_validate(t.task.spec or {})
    ctx = VerifierContext(deadline=time.monotonic() + 60, base_dir=base, sandboxes=provider)
    try:
        return asyncio.run(MeshConstraints().verify(t, spec, ctx))
    finally:
        ctx.cleanup()  # as the engine does: inline artifacts' temp files go with the item


@pytest.mark.parametrize("fmt", ["stl", "obj", "ply", "glb", "off"])
def test_every_format_loads_inline(tmp_path: Path, fmt: str) -> None:
    box = trimesh.creation.box(extents=[2, 3, 4])
    data = box.export(file_type=fmt)
    data = data.encode() if isinstance(data, str) else data
    traj = {
        "completion": "",
        "task": {
            "verifier": "mesh.constraints",
            "spec": {"constraints": {"volume": {"target": 24}, "extents": {"target": [2, 3, 4]}}},
        },
        "artifacts": {"mesh": {"base64": base64.b64encode(data).decode(), "name": f"box.{fmt}"}},
    }
    r = _run(traj, tmp_path)
    assert r.status == "pass", r.feedback


def test_unknown_format_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "part.step").write_bytes(b"ISO-10303-21;")
    traj = _mesh_item("part.step", {})
    with pytest.raises(verifiers.BadInput, match="spec.format"):
        _run(traj, tmp_path)


def test_oversized_file_fails_without_parsing(tmp_path: Path) -> None:
    (tmp_path / "big.stl").write_bytes(b"\0" * 5000)
    traj = _mesh_item("big.stl", {"max_file_bytes": 1000})
    r = _run(traj, tmp_path)
    assert r.status == "fail" and "over the 1000-byte limit" in r.feedback


def test_binary_stl_face_budget_is_checked_before_parsing(tmp_path: Path) -> None:
    sphere = trimesh.creation.icosphere(subdivisions=3)
    (tmp_path / "s.stl").write_bytes(sphere.export(file_type="stl"))
    traj = _mesh_item("s.stl", {"max_load_faces": 100})
    r = _run(traj, tmp_path)
    assert r.status == "fail" and "1280 faces, more than the 100" in r.feedback


def test_unknown_constraints_are_bad_input(shared_data: Path) -> None:
    # Strict specs (issue 19): a misspelt constraint must not silently go unchecked.
    traj = _mesh_item("unit_cube.STL", {"constraints": {"volumee": 1}})
    [r] = verifiers.score([traj], base_dir=shared_data / "meshes", sandbox="none")
    assert r.status == "error" and r.error is not None and r.error.kind == "bad_input"
    assert "unknown key 'volumee' (did you mean 'volume'?)" in r.error.message


def test_worker_process_hop_and_memory_limit(shared_data: Path) -> None:
    base = shared_data / "meshes"
    item = _mesh_item("torus.STL", {"constraints": {"genus": 1}}, id="torus")
    starved = _mesh_item("torus.STL", {"constraints": {"genus": 1}, "memory_mb": 64}, id="starved")
    ok, oom = verifiers.score([item, starved], sandbox="none", base_dir=str(base), workers=1)
    assert ok.status == "pass" and ok.details["stats"]["genus"] == 1
    # A job past its memory limit is an error (the verifier could not judge), never a 0.
    assert oom.status == "error" and oom.reward is None


CUBE = "import trimesh\ntrimesh.creation.box(extents=[1, 1, 1]).export('output.stl')\n"


def _fake(call: FakeCall, provider: FakeProvider, returncode: int = 0) -> ExecResult:
    if returncode == 0:
        provider.sandboxes[-1].files["output.stl"] = trimesh.creation.box(extents=[1, 1, 1]).export(
            file_type="stl"
        )
    return ExecResult(returncode=returncode, stderr=b"Traceback\nValueError: boom\n")


def _script_traj(completion: str) -> dict[str, Any]:
    return {
        "completion": completion,
        "task": {
            "verifier": "mesh.constraints",
            "spec": {"source": "script", "constraints": {"volume": {"target": 1}}},
        },
    }


def test_script_mode_runs_last_python_block(tmp_path: Path) -> None:
    provider: FakeProvider
    provider = FakeProvider(lambda call: _fake(call, provider))
    r = _run(
        _script_traj(f"first\n```python\nprint(1)\n```\nthen\n```python\n{CUBE}```\n"),
        tmp_path,
        provider,
    )
    assert r.status == "pass", r.feedback
    (call,) = provider.calls
    assert call.argv == ["python3", "main.py"] and call.files["main.py"] == CUBE.encode()


def test_script_mode_failures_are_scores(tmp_path: Path) -> None:
    provider: FakeProvider
    provider = FakeProvider(lambda call: _fake(call, provider, returncode=1))
    r = _run(_script_traj(f"```python\n{CUBE}```"), tmp_path, provider)
    assert (
        r.status == "fail"
        and "exited with code 1" in r.feedback
        and "ValueError: boom" in r.feedback
    )
    none = _run(_script_traj("I cannot write code."), tmp_path, FakeProvider())
    assert none.status == "fail" and "no python code block" in none.feedback


def test_script_mode_without_sandbox_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(verifiers.SandboxUnavailable):
        _run(_script_traj(f"```python\n{CUBE}```"), tmp_path)


def test_costly_analysis_is_the_models_fail_and_a_starved_worker_abstains(tmp_path: Path) -> None:
    """Through the real worker pool: a mesh that needs more CPU than its analysis budget is a
    ``fail`` with feedback (model-caused); a wall-clock limit the worker runs into is an
    ``error`` (machine-caused), never a score."""
    trimesh.creation.icosphere(subdivisions=6, radius=10.0).export(tmp_path / "ball.ply")
    heavy = {"min_thickness": 1.0, "mirror_symmetry": {"plane": "yz", "tol": 0.01}}
    costly = _mesh_item(
        "ball.ply", {"constraints": heavy, "cpu_budget_s": 0.05, "timeout_s": 300}, id="costly"
    )
    walled = _mesh_item(
        "ball.ply", {"constraints": heavy, "cpu_budget_s": 300, "timeout_s": 0.05}, id="walled"
    )
    fail, error = verifiers.score([costly, walled], sandbox="none", base_dir=str(tmp_path))
    assert fail.status == "fail" and fail.reward == 0.0, (fail.status, fail.error)
    assert "CPU-second budget" in fail.feedback
    assert error.status == "error" and error.reward is None
    assert error.error is not None and error.error.kind == "timeout"
