"""Meshes of the hostile corpus (``datasets/mesh/attacks.jsonl``), built from named recipes.

The corpus lines are data (recipe name, parameters, constraints, expected verdict); this
module turns a recipe into a file. Binary files (GLB with instancing, a thousand pillows) are
cheaper to build than to store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import trimesh

Recipe = Callable[..., trimesh.Trimesh | bytes]


def _box(lo: list[float], hi: list[float]) -> trimesh.Trimesh:
    lo_a, hi_a = np.asarray(lo, float), np.asarray(hi, float)
    box = trimesh.creation.box(extents=hi_a - lo_a)
    box.apply_translation((lo_a + hi_a) / 2)
    return box


def _join(*parts: trimesh.Trimesh) -> trimesh.Trimesh:
    """Concatenate without merging vertices (each part keeps its own)."""
    vertices, faces, offset = [], [], 0
    for part in parts:
        vertices.append(np.asarray(part.vertices))
        faces.append(np.asarray(part.faces) + offset)
        offset += len(part.vertices)
    return trimesh.Trimesh(np.vstack(vertices), np.vstack(faces), process=False)


def _flip(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    return trimesh.Trimesh(mesh.vertices, np.asarray(mesh.faces)[:, ::-1], process=False)


def _needle(a: list[float], b: list[float]) -> trimesh.Trimesh:
    """A closed zero-volume, zero-area body: a tetrahedron with four collinear vertices."""
    pa, pb = np.asarray(a, float), np.asarray(b, float)
    vertices = np.array([pa, pa + (pb - pa) / 3, pa + 2 * (pb - pa) / 3, pb])
    faces = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    return trimesh.Trimesh(vertices, faces, process=False)


def cube(size: float = 10.0, at: float = 0.0) -> trimesh.Trimesh:
    return _box([at] * 3, [at + size] * 3)


def two_cubes(gap: float = 5.0) -> trimesh.Trimesh:
    return _join(cube(10), cube(10, 10 + gap))


def cubes_sharing_vertex() -> trimesh.Trimesh:
    """Two cubes touching corner to corner: vertex (10, 10, 10) is shared."""
    mesh = _join(cube(10), cube(10, 10))
    mesh.merge_vertices()
    return mesh


def tetras_sharing_vertex() -> trimesh.Trimesh:
    tet = trimesh.Trimesh(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
        [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
        process=False,
    )
    other = trimesh.Trimesh(-np.asarray(tet.vertices), np.asarray(tet.faces)[:, ::-1])
    mesh = _join(tet, other)
    mesh.merge_vertices()
    return mesh


def cube_with_needle(length: float = 90.0) -> trimesh.Trimesh:
    """A 10 mm cube and a separate zero-area needle reaching ``length`` along x."""
    return _join(cube(10), _needle([12, 5, 5], [12 + length, 5, 5]))


def cube_with_attached_needle(length: float = 90.0) -> trimesh.Trimesh:
    """The needle starts at a corner of the cube (a shared, non-manifold vertex)."""
    mesh = _join(cube(10), _needle([10, 10, 10], [10 + length, 10, 10]))
    mesh.merge_vertices()
    return mesh


def cube_and_inverted_cube(inner: float = 5.0, apart: bool = True) -> trimesh.Trimesh:
    """A 10 mm cube and an inside-out ``inner`` cube: apart (tunes the volume) or nested (a
    cavity, an honest hollow part)."""
    at = 20.0 if apart else (10.0 - inner) / 2
    return _join(cube(10), _flip(cube(inner, at)))


def huge(scale: float = 1e154) -> trimesh.Trimesh:
    mesh = cube(10)
    mesh.apply_scale(scale)
    return mesh


def wedge() -> trimesh.Trimesh:
    """A right-angle wedge: not mirror-symmetric about its centre's yz plane."""
    vertices = [[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, 10], [10, 0, 10], [0, 10, 10]]
    return trimesh.convex.convex_hull(np.asarray(vertices, float))


def wedge_with_pillows(count: int = 1500, area: float = 0.0, seed: int = 0) -> trimesh.Trimesh:
    """The wedge plus ``count`` tiny closed bodies placed on its mirror image (about x = 5):
    zero-area needles (``area`` 0) or slivers of about that area, whose vertices sit where
    the reflected surface would be."""
    body = wedge()
    points, _ = trimesh.sample.sample_surface(body, count, seed=seed)
    mirrored = points.copy()
    mirrored[:, 0] = 10.0 - mirrored[:, 0]
    parts = [body]
    width = float(np.sqrt(area)) if area else 0.0
    for p in mirrored:
        if width:
            sliver = trimesh.creation.box(extents=[width, width, width])
            sliver.apply_translation(p)
            parts.append(sliver)
        else:
            parts.append(_needle(list(p), list(p + [0.0, 0.0, 1e-3])))
    return _join(*parts)


def symmetric_box() -> trimesh.Trimesh:
    return _box([-5, -3, 0], [5, 3, 4])


def tiny_open_triangle(size: float = 1e-6, offset: float = 0.0) -> trimesh.Trimesh:
    vertices = np.array([[0, 0, 0], [size, 0, 0], [0, size, 0]]) + offset
    return trimesh.Trimesh(vertices, [[0, 1, 2]], process=False)


def thick_box() -> trimesh.Trimesh:
    return _box([0, 0, 0], [20, 20, 5])


def hollow_cube() -> trimesh.Trimesh:
    return cube_and_inverted_cube(5.0, apart=False)


def instanced_glb(copies: int = 3000, subdivisions: int = 5) -> bytes:
    """One icosphere instanced ``copies`` times: about 1 MB, ``copies`` x 20,480 faces."""
    scene = trimesh.Scene()
    sphere = trimesh.creation.icosphere(subdivisions=subdivisions)
    for i in range(copies):
        scene.add_geometry(
            sphere,
            geom_name="sphere",
            node_name=f"n{i}",
            transform=trimesh.transformations.translation_matrix([3.0 * i, 0, 0]),
        )
    data = scene.export(file_type="glb")
    assert isinstance(data, bytes)
    return data


def glb_with_units(units: Any = "furlongs") -> bytes:
    mesh = cube(10)
    mesh.units = units
    data = mesh.export(file_type="glb")
    assert isinstance(data, bytes)
    return data


def overlapping_cubes(shift: float = 5.0, copies: int = 2, twist: float = 0.0) -> trimesh.Trimesh:
    """``copies`` 10 mm cubes, each shifted along x by ``shift`` and turned ``twist`` degrees
    about z from the one before (no shared vertices: each is a clean closed body)."""
    parts = []
    for i in range(copies):
        part = cube(10)
        part.apply_translation([-5.0, -5.0, -5.0])
        part.apply_transform(
            trimesh.transformations.rotation_matrix(np.radians(twist * i), [0, 0, 1])
        )
        part.apply_translation([5.0 + shift * i, 5.0, 5.0])
        parts.append(part)
    return _join(*parts)


def cube_in_cube(inner: float = 9.0) -> trimesh.Trimesh:
    """A 10 mm cube with a second, *solid* (outward-wound) cube inside it."""
    margin = (10.0 - inner) / 2
    return _join(cube(10), _box([margin] * 3, [margin + inner] * 3))


def cubes_touching_faces() -> trimesh.Trimesh:
    """Two cubes in face contact (no shared vertices): their union is their sum."""
    return _join(cube(10), _box([10.0, 2.0, 0.0], [20.0, 12.0, 10.0]))


def many_overlapping_cubes(count: int = 600) -> trimesh.Trimesh:
    """A chain of unit cubes 0.45 apart, each overlapping the next two."""
    return _join(*(_box([0.45 * i, 0.0, 0.0], [0.45 * i + 1.0, 1.0, 1.0]) for i in range(count)))


def sphere(subdivisions: int = 6, radius: float = 10.0) -> trimesh.Trimesh:
    """An icosphere (20 * 4**subdivisions faces): honest, but costly to analyse when large."""
    return trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)


RECIPES: dict[str, Recipe] = {
    name: globals()[name]
    for name in (
        "cube",
        "two_cubes",
        "cubes_sharing_vertex",
        "tetras_sharing_vertex",
        "cube_with_needle",
        "cube_with_attached_needle",
        "cube_and_inverted_cube",
        "huge",
        "wedge",
        "wedge_with_pillows",
        "symmetric_box",
        "tiny_open_triangle",
        "thick_box",
        "hollow_cube",
        "instanced_glb",
        "glb_with_units",
        "overlapping_cubes",
        "cube_in_cube",
        "cubes_touching_faces",
        "many_overlapping_cubes",
        "sphere",
    )
}


def build(recipe: str, params: dict[str, Any], folder: Path, name: str, fmt: str) -> Path:
    """Write the recipe's mesh as ``folder/name.fmt``."""
    made = RECIPES[recipe](**params)
    path = folder / f"{name}.{fmt}"
    if isinstance(made, bytes):
        path.write_bytes(made)
    else:
        data = made.export(file_type=fmt)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path
