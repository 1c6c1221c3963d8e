"""The scalable kernels against exact references: the generalised winding number (solid
angles, O(points x faces)) and analytic wall thicknesses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh
from verifiers.domains.mesh._geometry import contains, first_hits, winding_numbers

CLOSED = ["unit_cube.STL", "torus.STL", "featuretype.STL", "plate_holes.STL", "20mm-xyz-cube.stl"]


def exact_winding(vertices: np.ndarray, faces: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Van Oosterom-Strackee solid angles summed over all faces (the slow, exact reference)."""
    out = np.empty(len(points))
    for k, p in enumerate(points):
        a, b, c = (vertices[faces[:, i]] - p for i in range(3))
        la, lb, lc = (np.linalg.norm(x, axis=1) for x in (a, b, c))
        det = np.einsum("ij,ij->i", a, np.cross(b, c))
        den = (
            la * lb * lc
            + np.einsum("ij,ij->i", a, b) * lc
            + np.einsum("ij,ij->i", b, c) * la
            + np.einsum("ij,ij->i", c, a) * lb
        )
        out[k] = np.arctan2(det, den).sum() / (2 * np.pi)
    return out


@pytest.mark.parametrize("name", CLOSED)
def test_contains_matches_exact_winding_number(shared_data: Path, name: str) -> None:
    mesh = trimesh.load(shared_data / "meshes" / name, force="mesh")
    lo, hi = mesh.bounds
    rng = np.random.default_rng(1)
    random = rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), size=(300, 3))
    # Lattice points line up with CAD edges and vertices: the degenerate ray cases.
    lattice = np.stack(
        np.meshgrid(*[np.linspace(a, b, 5) for a, b in zip(lo, hi, strict=True)]), -1
    ).reshape(-1, 3)
    points = np.vstack([random, lattice])
    exact = exact_winding(np.asarray(mesh.vertices), np.asarray(mesh.faces), points)
    # Points on the surface are ambiguous (lattice points often are): leave them out.
    _, distance, _ = trimesh.proximity.closest_point(mesh, points)
    clear = (distance > 1e-6 * mesh.scale) & (np.abs(exact - np.round(exact)) < 1e-6)
    ours = contains(mesh.vertices, mesh.faces, points)
    assert clear.sum() > 250, clear.sum()
    assert np.array_equal(ours[clear], np.round(exact[clear]) > 0)


def test_rays_through_cube_edges_and_vertices_count_once() -> None:
    box = trimesh.creation.box(extents=[2, 2, 2])
    # Points whose +z/+x/+y rays pass exactly through edges and vertices of the box.
    pts = np.array([[0, 0, 0], [1 - 1e-9, 0, 0], [0.5, 0.5, -5], [1, 1, -5], [0, 1, -5], [3, 1, 0]])
    for axis in range(3):
        w = winding_numbers(box.vertices, box.faces, pts, axis=axis)
        assert w[0] == 1 and w[1] == 1
        assert set(np.unique(w[2:])) <= {0, 1}
        assert w[5] == 0
    assert contains(box.vertices, box.faces, pts).tolist() == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_winding_counts_nested_shells() -> None:
    outer = trimesh.creation.box(extents=[4, 4, 4])
    inner = trimesh.creation.box(extents=[1, 1, 1])
    both = trimesh.util.concatenate([outer, inner])
    w = winding_numbers(both.vertices, both.faces, np.array([[0, 0, 0], [1.5, 0, 0], [9, 0, 0]]))
    assert w.tolist() == [2, 1, 0]


def test_first_hits_measures_wall_thickness() -> None:
    plate = trimesh.creation.box(extents=[10, 10, 0.5])
    origins = np.array([[0, 0, 0.25], [1, 2, -0.25], [0, 0, 0.25]])
    dirs = np.array([[0, 0, -1], [0, 0, 1], [0, 0, -1]])
    d = first_hits(plate.vertices, plate.faces, origins, dirs, 2.0)
    assert np.allclose(d, 0.5)
    assert np.isinf(first_hits(plate.vertices, plate.faces, origins[:1], dirs[:1], 0.4)).all()


def test_contains_is_bounded_on_a_large_mesh() -> None:
    sphere = trimesh.creation.icosphere(subdivisions=6)  # 81,920 faces
    pts = np.random.default_rng(0).uniform(-1.2, 1.2, size=(2000, 3))
    r = np.linalg.norm(pts, axis=1)
    inside = contains(sphere.vertices, sphere.faces, pts)
    clear = np.abs(r - 1) > 2e-3
    assert np.array_equal(inside[clear], (r < 1)[clear])
