"""The hostile mesh corpus (``datasets/mesh/attacks.jsonl``): each line a recipe, the
constraints it targets and the verdict it must get, with honest controls beside the attacks.

Families: ``abstain`` (a file that used to make the verifier error or time out must be the
model's ``fail``), ``degenerate`` (geometry that used to satisfy a constraint without the
work), ``control`` (honest parts that must keep their verdict).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mesh_recipes import build, tiny_open_triangle
from verifiers.domains.mesh._geometry import first_hits

import verifiers

CORPUS = Path(__file__).parents[3] / "datasets" / "mesh" / "attacks.jsonl"
LINES = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def test_corpus_covers_every_family() -> None:
    families = {line["family"] for line in LINES}
    assert families == {"abstain", "degenerate", "control"}
    assert len({line["id"] for line in LINES}) == len(LINES)


@pytest.mark.parametrize("line", LINES, ids=[line["id"] for line in LINES])
def test_attack_gets_its_verdict(line: dict[str, Any], tmp_path: Path, judge: Any) -> None:
    path = build(line["recipe"], line["params"], tmp_path, line["id"], line["format"])
    started = time.monotonic()
    result = judge(path, line["constraints"], **line["spec"])
    took = time.monotonic() - started
    expected = line["expected"]
    statuses = expected["status"] if isinstance(expected["status"], list) else [expected["status"]]
    assert result.status in statuses, (result.status, result.feedback, result.error)
    assert result.status != "error"
    if "feedback" in expected:
        assert expected["feedback"] in result.feedback, result.feedback
    failed = {c["name"] for c in result.details.get("checks", []) if not c["passed"]}
    for name in expected.get("failed", []):
        assert name in failed, (result.feedback, result.details.get("stats"))
    if "max_seconds" in expected:
        assert took < expected["max_seconds"], took


def test_rays_stop_at_the_mesh_box() -> None:
    """A 1e-6 triangle and a 1 mm wall: the march is bounded by the mesh, not the distance."""
    mesh = tiny_open_triangle(1e-6)
    origins = np.asarray(mesh.vertices).mean(axis=0)[None].repeat(16, axis=0)
    directions = np.tile([0.0, 0.0, -1.0], (16, 1))
    started = time.monotonic()
    hits = first_hits(mesh.vertices, mesh.faces, origins, directions, 1.0)
    assert np.all(np.isinf(hits))
    assert time.monotonic() - started < 5.0


def _artifact_item(path: str) -> dict[str, Any]:
    return {
        "id": "m",
        "completion": "",
        "task": {"verifier": "mesh.constraints", "spec": {"constraints": {"bodies": 1}}},
        "artifacts": {"mesh": {"path": path}},
    }


def test_a_mesh_the_agent_never_wrote_is_a_fail(tmp_path: Path) -> None:
    [result] = verifiers.score([_artifact_item("out/part.stl")], base_dir=tmp_path)
    assert result.status == "fail" and result.reward == 0.0
    assert "was not written" in result.feedback
    no_entry = {**_artifact_item("x.stl"), "artifacts": {}}
    [result] = verifiers.score([no_entry], base_dir=tmp_path)
    assert result.status == "fail" and "no artifact 'mesh'" in result.feedback


def test_a_path_escaping_the_input_dir_stays_bad_input(tmp_path: Path) -> None:
    (tmp_path / "inner").mkdir()
    [result] = verifiers.score([_artifact_item("../../etc/passwd")], base_dir=tmp_path / "inner")
    assert result.status == "error" and result.error is not None
    assert result.error.kind == "bad_input"


def _body_volumes(mesh: Any) -> tuple[Any, Any, Any, Any]:
    from verifiers.domains.mesh._analyze import topology

    v, f = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    labels = topology(np, f, len(v))["body_labels"]
    tri = v[f]
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    per_face = np.einsum("ij,ij->i", tri[:, 0], cross) / 6
    return v, f, labels, np.bincount(labels, weights=per_face)


def test_overlap_sweep_picks_the_axis_and_caps_its_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 slabs stacked along y share their x-range (2M candidate pairs along x) but
    not their y-range: the sweep runs along y and compares nothing; past the pair cap the
    gate fails with feedback instead of running quadratic."""
    from mesh_recipes import _box, _join
    from verifiers.domains.mesh import _analyze

    slabs = _join(*(_box([0.0, 2.0 * i, 0.0], [10.0, 2.0 * i + 1, 1.0]) for i in range(2000)))
    assert _analyze._overlap_volume(np, *_body_volumes(slabs)) == (0.0, 0, "")
    crossing = _join(*(_box([0.0, 0.1 * i, 0.0], [10.0, 0.1 * i + 5.0, 1.0]) for i in range(60)))
    monkeypatch.setattr(_analyze, "MAX_BOX_PAIRS", 100)
    excess, count, problem = _analyze._overlap_volume(np, *_body_volumes(crossing))
    assert excess == 0.0 and count == 60 and "too many for the overlap check" in problem


@pytest.mark.bwrap
def test_a_script_output_cannot_name_the_reference_as_its_data() -> None:
    """A base64 reference is written beside the fetched output on the host; trimesh reads a
    glTF's buffers from the file's folder. An output whose buffer is ``ref-<hash>.ply`` (the
    reference's vertices) passed the gate and the reference check; it now has its own folder."""
    import base64
    import hashlib
    import struct

    import trimesh

    cube = trimesh.creation.box((10, 10, 10))
    v = np.asarray(cube.vertices, dtype="<f4")
    f = np.asarray(cube.faces, dtype="<u4")
    header = (
        f"ply\nformat binary_little_endian 1.0\nelement vertex {len(v)}\nproperty float x\n"
        f"property float y\nproperty float z\nelement face {len(f)}\n"
        "property list uchar int vertex_indices\nend_header\n"
    ).encode()
    ply = header + v.tobytes() + b"".join(struct.pack("<B3i", 3, *map(int, t)) for t in f)
    indices = f.tobytes()
    gltf = {
        "asset": {"version": "2.0"},
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "accessors": [
            {
                "bufferView": 0,
                "componentType": 5126,
                "count": len(v),
                "type": "VEC3",
                "max": [5, 5, 5],
                "min": [-5, -5, -5],
            },
            {"bufferView": 1, "componentType": 5125, "count": f.size, "type": "SCALAR"},
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": len(header), "byteLength": v.nbytes},
            {"buffer": 1, "byteOffset": 0, "byteLength": len(indices)},
        ],
        "buffers": [
            {"byteLength": len(ply), "uri": f"ref-{hashlib.sha256(ply).hexdigest()[:12]}.ply"},
            {
                "byteLength": len(indices),
                "uri": "data:application/octet-stream;base64," + base64.b64encode(indices).decode(),
            },
        ],
    }
    script = f"open('output.gltf', 'w').write({json.dumps(gltf)!r})\n"
    item = {
        "id": "reference-as-buffer",
        "completion": f"```python\n{script}```",
        "task": {
            "verifier": "mesh.constraints",
            "spec": {"source": "script", "format": "gltf", "constraints": {}},
            "reference": {
                "mesh": {"base64": base64.b64encode(ply).decode(), "name": "ref.ply"},
                "chamfer_max": 1.0,
            },
        },
    }
    [result] = verifiers.score([item], sandbox="local")
    assert result.status == "fail" and result.reward == 0.0, (result.feedback, result.error)
    assert "FileNotFoundError" in result.feedback, result.feedback
