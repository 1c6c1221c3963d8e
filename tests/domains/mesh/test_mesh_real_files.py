"""``mesh.constraints`` on the real meshes in ../shared/data/meshes: constraints derived from
each mesh's known properties, verdicts checked both ways (met and violated)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

ALL_CUBE = {
    "extents": {"target": [1, 1, 1]},
    "bbox": {"min": [-0.5, -0.5, -0.5], "max": [0.5, 0.5, 0.5], "abs_tol": 1e-6},
    "volume": {"target": 1.0, "rel_tol": 1e-6},
    "area": {"target": 6.0},
    "bodies": 1,
    "genus": 0,
    "max_faces": 12,
    "inside": [[0, 0, 0], [0.4, -0.4, 0.4]],
    "outside": [[0.6, 0, 0], [2, 2, 2]],
    "mirror_symmetry": [{"plane": "yz"}, {"plane": "xz"}, {"plane": "xy"}],
    "min_thickness": 0.95,
    "units": {"unit": "mm", "size_range": [0.5, 2]},
    "clearance": {"obstacles": [{"sphere": {"center": [2, 0, 0], "radius": 0.5}}], "min": 0.9},
}


def test_unit_cube_meets_every_constraint(judge: Any, meshes: Path) -> None:
    r = judge(meshes / "unit_cube.STL", ALL_CUBE)
    assert r.status == "pass" and r.reward == 1.0, r.feedback
    assert r.details["all_passed"] is True
    assert r.details["total"] == 15  # three mirror planes are three components
    assert r.components["gate"] == 1.0
    assert r.details["stats"]["volume"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("volume", {"target": 2.0}, "volume is 1, expected 2"),
        ("area", {"min": 7}, "below the minimum 7"),
        ("extents", {"target": [1, 1, 1.5], "abs_tol": 0.1}, "z off by -0.5"),
        ("bodies", 2, "bodies is 1, expected 2"),
        ("genus", 1, "genus is 0, expected 1"),
        ("max_faces", 10, "over the budget of 10 by 2"),
        ("inside", [[0.7, 0, 0]], "(0.7 x 0 x 0)"),
        ("outside", [[0.1, 0.1, 0.1]], "must be outside the part are inside"),
        ("min_thickness", 1.5, "wall too thin: 1"),
        ("units", {"unit": "mm", "size_range": [10, 100]}, "it fits if the file is in cm"),
        (
            "clearance",
            {"obstacles": [{"box": {"min": [0.4, 0, 0], "max": [1, 1, 1]}}]},
            "intersects",
        ),
    ],
)
def test_unit_cube_violations_are_named(
    judge: Any, meshes: Path, key: str, value: Any, needle: str
) -> None:
    constraints = {"volume": {"target": 1.0}, key: value}
    if key == "volume":
        constraints = {"genus": 0, "volume": value}
    r = judge(meshes / "unit_cube.STL", constraints)
    assert r.status == "fail"
    assert r.reward == 0.5
    assert r.components[key] == 0.0
    assert r.details["all_passed"] is False
    assert f"- {key}: " in r.feedback and needle in r.feedback, r.feedback


@pytest.mark.parametrize(
    ("name", "genus", "volume"),
    [
        ("torus.STL", 1, 4.9175),
        ("featuretype.STL", 9, 11.6277),
        ("plate_holes.STL", 5, 767362.11),
        ("1002_tray_bottom.STL", 23, 347865.9),
        ("unit_sphere.STL", 0, 4 / 3 * math.pi),
        ("cylinder.stl", 0, math.pi * 8),
        ("7_8ths_cube.stl", 0, 7 / 8 * 40**3),
    ],
)
def test_genus_and_volume_of_real_parts(
    judge: Any, meshes: Path, name: str, genus: int, volume: float
) -> None:
    good = judge(
        meshes / name, {"genus": genus, "bodies": 1, "volume": {"target": volume, "rel_tol": 0.02}}
    )
    assert good.status == "pass", good.feedback
    bad = judge(
        meshes / name, {"genus": genus + 1, "volume": {"target": volume * 1.1, "rel_tol": 0.02}}
    )
    assert bad.status == "fail" and bad.reward == 0.0
    assert f"genus is {genus}, expected {genus + 1}" in bad.feedback


def test_torus_hole_is_outside_and_tube_inside(judge: Any, meshes: Path) -> None:
    r = judge(
        meshes / "torus.STL",
        {
            "inside": [[1, 0, 0], [0, -1, 0]],
            "outside": [[0, 0, 0], [1, 0, 0.6]],
            "min_thickness": 0.9,
        },
    )
    assert r.status == "pass", r.feedback
    thin = judge(meshes / "torus.STL", {"min_thickness": 1.2})
    assert thin.status == "fail" and "required 1.2" in thin.feedback


def test_plate_units_mixup_is_explained(judge: Any, meshes: Path) -> None:
    inches = {"units": "in", "extents": {"target": [8, 12, 0.5], "rel_tol": 0.01}}
    r = judge(meshes / "plate_holes.STL", inches)
    assert r.status == "fail" and r.reward == 0.0
    assert "looks modelled in mm, not in (scale it by 0.0393701)" in r.feedback
    ok = judge(
        meshes / "plate_holes.STL",
        {**inches, "extents": {"target": [203.2, 304.8, 12.7]}, "units": "mm"},
    )
    assert ok.status == "pass", ok.feedback


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("soup.stl", "not watertight"),
        ("empty.stl", "empty"),
        ("notenoughindices.obj", "not watertight"),
        ("multibody.stl", "not consistently wound"),
        ("two_objects.obj", "not watertight"),
        ("bunny.ply", "not watertight"),
        ("teapot.stl", "not watertight"),
    ],
)
def test_broken_or_open_meshes_fail_the_gate(
    judge: Any, meshes: Path, name: str, reason: str
) -> None:
    r = judge(meshes / name, {"bodies": 1, "volume": {"min": 0}})
    assert r.status == "fail" and r.reward == 0.0
    assert r.components == {"gate": 0.0}
    assert r.feedback.startswith("gate failed:") and reason in r.feedback, r.feedback


def test_open_meshes_can_be_allowed(judge: Any, meshes: Path) -> None:
    r = judge(meshes / "multibody.stl", {"closed": False, "bodies": 2, "genus": 0})
    assert r.components["bodies"] == 1.0
    assert r.components["genus"] == 0.0 and "undefined" in r.feedback
    soup = judge(
        meshes / "soup.stl", {"closed": False, "bodies": {"min": 50}, "volume": {"min": 0}}
    )
    assert soup.components["bodies"] == 1.0 and soup.components["volume"] == 0.0


def test_garbage_bytes_fail_the_gate_not_the_verifier(judge: Any, tmp_path: Path) -> None:
    bad = tmp_path / "part.stl"
    bad.write_bytes(b"solid x\nfacet normal nonsense\n" + bytes(range(256)) * 4)
    r = judge(bad, {"bodies": 1})
    assert r.status == "fail" and r.components == {"gate": 0.0}


def test_reference_similarity(judge: Any, meshes: Path) -> None:
    same = judge(
        meshes / "20mm-xyz-cube.stl",
        {"extents": {"target": [20, 20, 20]}},
        reference={"mesh": "unit_cube.STL", "chamfer_max": 1.0, "iou_min": 0.95},
    )
    assert same.status == "pass", same.feedback
    ref = same.details["stats"]["reference"]
    assert ref["iou_method"] == "manifold3d" and ref["iou"] > 0.97 and ref["chamfer"] < 1.0
    other = judge(
        meshes / "unit_sphere.STL",
        {},
        reference={"mesh": "unit_cube.STL", "chamfer_max": 1.0, "iou_min": 0.9},
    )
    assert other.status == "fail" and other.components["iou"] == 0.0
    assert other.details["stats"]["reference"]["iou"] == pytest.approx(math.pi / 6, rel=0.03)
    assert "below 0.9" in other.feedback
    assert other.details["stats"]["reference"]["chamfer"] > 2 * ref["chamfer"]


def test_clearance_gap_is_measured(judge: Any, meshes: Path) -> None:
    spec = {
        "clearance": {
            "obstacles": [{"name": "bolt", "sphere": {"center": [0, 0, 2.5], "radius": 1}}],
            "min": 1.5,
        }
    }
    r = judge(meshes / "unit_cube.STL", spec)
    assert r.status == "fail" and "bolt: gap 1 (needs 1.5, short by 0.5)" in r.feedback, r.feedback


def test_mirror_symmetry_detects_an_off_centre_boss(judge: Any, tmp_path: Path) -> None:
    import trimesh

    body = trimesh.creation.box(extents=[10, 10, 2])
    boss = trimesh.creation.box(extents=[2, 2, 3])
    boss.apply_translation([3, 0, 2.5])
    part = trimesh.util.concatenate([body, boss])
    (tmp_path / "part.stl").write_bytes(part.export(file_type="stl"))
    r = judge(
        tmp_path / "part.stl",
        {"closed": False, "mirror_symmetry": [{"plane": "yz"}, {"plane": "xz"}]},
    )
    assert r.components["mirror_symmetry[xz]"] == 1.0
    assert r.components["mirror_symmetry[yz]"] == 0.0
    assert "not mirror-symmetric about yz" in r.feedback
