"""The worker side of ``mesh.constraints``: parse the mesh, run the gate and every check.

Runs in a killable worker process (``ctx.run_in_worker``) under an address-space limit, so a
hostile or huge file cannot hang or exhaust the host. Input and output are JSON::

    payload = {"path": "/tmp/x.stl", "file_type": "stl", "closed": true,
               "constraints": {...}, "reference": {"path": ..., "file_type": ...,
               "chamfer_max": 1.0, "iou_min": 0.9, "samples": 8192, "normalize": true} | null,
               "max_load_faces": 5000000, "seed": 0}
    result  = {"gate": {"passed": bool, "reason": str}, "stats": {...},
               "checks": [{"name", "passed", "message", "measured", "target"}, ...]}

Model failures (unparseable file, open mesh, a violated constraint) are values in the
result; only a broken reference mesh (the task's fault) raises ``BadInput``.
"""

from __future__ import annotations

import json
import math
import struct
import time
from pathlib import Path
from typing import Any

from verifiers.errors import BadInput, MissingDependency

from ._spec import UNIT_MM

__all__ = ["analyze"]

_TRIMESH_UNITS = {
    "um": "microns",
    "mm": "millimeters",
    "cm": "centimeters",
    "m": "meters",
    "in": "inches",
    "ft": "feet",
}
MAX_COORDINATE = 1e12
"""Largest absolute vertex coordinate analysed (squares must stay far from float overflow)."""
_DEGENERATE = 1e-12
"""Faces with less than this share of the total area count as zero-area."""
_AXIS_NORMALS = {"yz": (1.0, 0.0, 0.0), "xz": (0.0, 1.0, 0.0), "xy": (0.0, 0.0, 1.0)}


def _imports() -> tuple[Any, Any]:
    return MissingDependency.require("numpy", "mesh"), MissingDependency.require("trimesh", "mesh")


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _vec(v: Any) -> str:
    return " x ".join(_fmt(float(c)) for c in v)


def _check(
    name: str, passed: bool, message: str, measured: Any = None, target: Any = None
) -> dict[str, Any]:
    return {
        "name": name,
        "passed": bool(passed),
        "message": message,
        "measured": measured,
        "target": target,
    }


# -- loading ---------------------------------------------------------------------------------


def _stl_face_count(path: Path) -> int | None:
    """Face count from a binary STL header, when the file is one (without parsing it)."""
    size = path.stat().st_size
    if size < 84:
        return None
    with path.open("rb") as fh:
        head = fh.read(84)
    (count,) = struct.unpack("<I", head[80:84])
    if 84 + 50 * count == size:
        return int(count)
    return None


MAX_INSTANCES = 4096
"""Scene nodes holding a mesh that a glTF/GLB file may have: trimesh builds one mesh object per
node before concatenating them, so node count costs time even when faces are few."""

_GLTF_TRIANGLES = {4: 0, 5: 2, 6: 2}  # primitive mode -> vertices that do not start a face


def _gltf_json(path: Path, file_type: str) -> dict[str, Any] | None:
    """The glTF JSON of a ``.gltf`` or ``.glb`` file, or None when it cannot be read."""
    try:
        with path.open("rb") as fh:
            if file_type == "gltf":
                data: Any = json.loads(fh.read())
            else:
                head = fh.read(20)
                if len(head) < 20 or head[:4] != b"glTF" or head[16:20] != b"JSON":
                    return None
                (length,) = struct.unpack("<I", head[12:16])
                data = json.loads(fh.read(length))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _gltf_face_count(path: Path, file_type: str) -> tuple[int, int] | None:
    """(faces after instancing, mesh instances) declared by a glTF/GLB file, without parsing
    its buffers: every node that holds a mesh counts that mesh's faces once more.

    A 1 MB GLB may instance one 20k-face mesh 3,000 times; trimesh would expand it to 61M
    faces before any face cap could look. Counting from the JSON keeps the cap ahead of the
    expansion. Returns None when the JSON cannot be read (trimesh then reports the error).
    """
    data = _gltf_json(path, file_type)
    if data is None:
        return None
    accessors = data.get("accessors")
    meshes = data.get("meshes")
    nodes = data.get("nodes")
    if not isinstance(accessors, list) or not isinstance(meshes, list):
        return 0, 0
    per_mesh: list[int] = []
    for mesh in meshes:
        faces = 0
        prims = mesh.get("primitives") if isinstance(mesh, dict) else None
        for prim in prims if isinstance(prims, list) else []:
            if not isinstance(prim, dict):
                continue
            mode = prim.get("mode", 4)
            if mode not in _GLTF_TRIANGLES:
                continue
            index = prim.get("indices")
            if index is None:
                attrs = prim.get("attributes")
                index = attrs.get("POSITION") if isinstance(attrs, dict) else None
            if isinstance(index, int) and 0 <= index < len(accessors):
                acc = accessors[index]
                count = acc.get("count", 0) if isinstance(acc, dict) else 0
                if isinstance(count, int) and count > 0:
                    faces += count // 3 if mode == 4 else max(0, count - 2)
        per_mesh.append(faces)
    if not isinstance(nodes, list):  # no node list: each mesh is shown once
        return sum(per_mesh), len(per_mesh)
    total = instances = 0
    for node in nodes:
        ref = node.get("mesh") if isinstance(node, dict) else None
        if isinstance(ref, int) and 0 <= ref < len(per_mesh):
            total += per_mesh[ref]
            instances += 1
    return total, instances


def load_mesh(path: Path, file_type: str, max_faces: int) -> tuple[Any, str | None]:
    """Parse a mesh file into one ``trimesh.Trimesh`` (scenes are concatenated).

    Face caps apply before anything is expanded: a binary STL's header count, a glTF/GLB's
    declared faces after instancing, and the parsed face count.

    Returns:
        (mesh, None) or (None, reason) when the file is not a usable mesh.
    """
    np, trimesh = _imports()
    if file_type == "stl":
        count = _stl_face_count(path)
        if count is not None and count > max_faces:
            return None, f"mesh has {count} faces, more than the {max_faces} this check analyses"
    if file_type in ("glb", "gltf"):
        declared = _gltf_face_count(path, file_type)
        if declared is not None:
            count, instances = declared
            if count > max_faces:
                return None, (
                    f"the scene has {count} faces after instancing, more than the {max_faces} "
                    "this check analyses"
                )
            if instances > MAX_INSTANCES:
                return None, (
                    f"the scene places meshes at {instances} nodes, more than {MAX_INSTANCES}; "
                    "merge them into one mesh"
                )
    try:
        loaded = trimesh.load(str(path), file_type=file_type, force="mesh", process=True)
    except MemoryError:
        raise  # the worker's memory limit: the pool reports it, it is not a parse error
    except Exception as exc:  # any parser failure is a property of the file
        return None, f"could not parse the {file_type.upper()} file: {type(exc).__name__}: {exc}"
    if isinstance(loaded, trimesh.Scene):  # force="mesh" on an empty scene
        return None, "the file holds no mesh geometry (empty)"
    if not isinstance(loaded, trimesh.Trimesh):
        return None, f"the file holds a {type(loaded).__name__}, not a triangle mesh"
    faces = np.asarray(loaded.faces)
    if len(faces) == 0:
        return None, "the mesh is empty (no faces)"
    if len(faces) > max_faces:
        return None, f"mesh has {len(faces)} faces, more than the {max_faces} this check analyses"
    return loaded, None


# -- topology --------------------------------------------------------------------------------


def topology(np: Any, faces: Any, n_vertices: int) -> dict[str, Any]:
    """Watertightness, winding, vertex-manifoldness, bodies, Euler number and genus.

    Watertight: every undirected edge is used by exactly two faces. Consistently wound: no
    directed edge occurs twice (so the two uses run in opposite directions). Bodies are
    *edge*-connected components of faces: two solids that touch at one vertex are two
    bodies, and that vertex is non-manifold (its faces form two fans, not one disc), which
    the gate refuses because volume, genus and containment all assume a manifold. Genus =
    (2 * bodies - Euler) / 2 on a closed manifold. ``body_labels`` gives each face's body.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    f = np.asarray(faces, dtype=np.int64)
    n_faces = len(f)
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    n = np.int64(max(n_vertices, 1))
    lo = np.minimum(directed[:, 0], directed[:, 1])
    hi = np.maximum(directed[:, 0], directed[:, 1])
    # One sort of the undirected edge keys answers all the edge questions.
    order = np.argsort(lo * n + hi, kind="stable")
    keys = (lo * n + hi)[order]
    starts = np.concatenate([[True], keys[1:] != keys[:-1]])
    group_sizes = np.diff(np.append(np.flatnonzero(starts), len(keys)))
    n_edges = int(starts.sum())
    watertight = bool(np.all(group_sizes == 2))
    if watertight:
        # Each edge's two uses must run in opposite directions.
        first, second = order[0::2], order[1::2]
        consistent = bool(np.all(directed[first, 0] == directed[second, 1]))
    else:
        d_keys = np.sort(directed[:, 0] * n + directed[:, 1])
        consistent = bool(np.all(d_keys[1:] != d_keys[:-1]))
        # Consecutive uses of the same edge link their faces.
        same = np.flatnonzero(~starts[1:])
        first, second = order[same], order[same + 1]
    face_a, face_b = first % n_faces, second % n_faces
    face_graph = coo_matrix(
        (np.ones(len(face_a), dtype=np.int8), (face_a, face_b)), shape=(n_faces, n_faces)
    )
    bodies, body_labels = connected_components(face_graph, directed=False)
    used = np.bincount(f.ravel(), minlength=n_vertices) > 0
    n_used = int(np.count_nonzero(used))
    # Vertex fans: corners (face, position) around a vertex, linked across shared edges.
    block = np.repeat(np.arange(3), n_faces)
    face_of = np.tile(np.arange(n_faces), 3)
    start_corner = face_of * 3 + block
    end_corner = face_of * 3 + (block + 1) % 3
    same_dir = directed[first, 0] == directed[second, 0]
    link_u = (start_corner[first], np.where(same_dir, start_corner[second], end_corner[second]))
    link_w = (end_corner[first], np.where(same_dir, end_corner[second], start_corner[second]))
    corner_graph = coo_matrix(
        (
            np.ones(2 * len(first), dtype=np.int8),
            (np.concatenate([link_u[0], link_w[0]]), np.concatenate([link_u[1], link_w[1]])),
        ),
        shape=(3 * n_faces, 3 * n_faces),
    )
    _, corner_labels = connected_components(corner_graph, directed=False)
    corner_vertex = f.ravel()  # corner id = face * 3 + position
    fans = len(np.unique(corner_vertex * np.int64(3 * n_faces) + corner_labels))
    nonmanifold_vertices = int(fans - n_used)
    euler = int(n_used - n_edges + n_faces)
    genus = (2 * bodies - euler) / 2 if watertight and nonmanifold_vertices == 0 else None
    return {
        "watertight": watertight,
        "winding_consistent": consistent,
        "nonmanifold_vertices": nonmanifold_vertices,
        "bodies": int(bodies),
        "euler": euler,
        "genus": None if genus is None else float(genus),
        "body_labels": body_labels,
    }


def _convertible(trimesh: Any, declared: Any) -> bool:
    """Whether trimesh can convert from the units a file declares (``"furlongs"``, ``5``: no)."""
    if not isinstance(declared, str) or len(declared) > 32:
        return False
    try:
        trimesh.units.to_inch(declared)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return True


def _stray_inverted_bodies(
    np: Any, vertices: Any, faces: Any, labels: Any, body_volumes: Any
) -> list[int]:
    """Bodies with negative volume that are not cavities inside another body.

    An inside-out shell nested in a solid is a hollow part (its volume is subtracted, as it
    should be). One standing apart only subtracts volume from the total, which would let a
    model tune ``volume`` with a separate body; a point on it must lie inside the rest.
    """
    from ._geometry import winding_numbers

    negative = np.flatnonzero(body_volumes < 0)
    if not len(negative):
        return []
    tri = vertices[faces]
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    size = np.linalg.norm(cross, axis=1)
    # Each negative body's largest face: sort by (body, area) and take each body's last.
    order = np.lexsort((size, labels))
    last = np.flatnonzero(np.append(labels[order][1:] != labels[order][:-1], True))
    biggest = order[last]
    biggest = biggest[np.isin(labels[biggest], negative)]
    # Step off the face to the side its (inverted) normal points away from: for a cavity
    # that is the surrounding material (winding number 1), for a stray body empty space (0).
    normal = cross[biggest] / size[biggest, None]
    step = 1e-6 * np.sqrt(size[biggest])[:, None]
    probes = tri[biggest].mean(axis=1) - normal * step
    inside = winding_numbers(vertices, faces, probes) > 0
    return [int(b) for b in labels[biggest][~inside][:8]]


# -- checks ----------------------------------------------------------------------------------


NEGLIGIBLE_BODY = 1e-9
"""Share of the total volume below which a body is left out of the overlap analysis."""
MAX_BOX_PAIRS = 20_000_000
"""Most body pairs whose ranges overlap along the swept axis that the overlap check
compares (vectorised: well under a second); more fail the gate with feedback."""
MAX_UNION_BODIES = 512
"""Most solid bodies whose bounding boxes overlap that the union volume is computed for; a
mesh with more overlapping bodies fails with feedback (bounded work)."""


def _overlap_volume(
    np: Any, vertices: Any, faces: Any, labels: Any, body_volumes: Any
) -> tuple[float, int, str]:
    """Volume counted more than once by solid bodies that overlap, and how many overlap.

    The divergence-theorem volume adds each body's volume, so two identical cubes stacked
    in place count twice. Bodies whose bounding boxes overlap are united with manifold3d
    (exact booleans) and the excess is returned; cavities (inside-out bodies nested in a
    solid, already checked) keep subtracting their volume. Returns ``(excess, overlapping,
    problem)``; ``problem`` is a reason to fail the gate ("" when none).
    """
    # Bodies of negligible volume (slivers) cannot move the total by more than the face cap
    # times this share, far below any tolerance; they are left out of the union.
    total = float(body_volumes[body_volumes > 0].sum())
    solid = np.flatnonzero(body_volumes > NEGLIGIBLE_BODY * total)
    if len(solid) < 2:
        return 0.0, 0, ""
    lo = np.full((len(body_volumes), 3), np.inf)
    hi = np.full((len(body_volumes), 3), -np.inf)
    corner = vertices[faces]  # (faces, 3, 3)
    np.minimum.at(lo, labels, corner.min(axis=1))
    np.maximum.at(hi, labels, corner.max(axis=1))
    # Sweep along one axis: for each body, the bodies starting inside its range there (one
    # searchsorted), tested on all three axes in one vectorised step. The candidates compared are capped, so a mesh
    # of many bodies stacked over one x-range cannot make this quadratic.
    # The axis along which the fewest boxes overlap is swept (slabs stacked along y share
    # their x-range, not their y-range).
    best: tuple[int, Any, Any] | None = None
    for axis in range(3):
        order_k = solid[np.argsort(lo[solid, axis], kind="stable")]
        ends_k = np.searchsorted(lo[order_k, axis], hi[order_k, axis], side="left")
        pairs = int(np.sum(np.maximum(ends_k - np.arange(len(order_k)) - 1, 0)))
        if best is None or pairs < best[0]:
            best = (pairs, order_k, ends_k)
    assert best is not None
    pairs, order, ends = best
    if pairs > MAX_BOX_PAIRS:
        problem = (
            f"the boxes of {len(order)} solid bodies overlap in {pairs} pairs along every "
            "axis, too many for the overlap check; merge them into one solid (a boolean union) "
            "before exporting"
        )
        return 0.0, len(order), problem
    parent = {int(b): int(b) for b in solid}

    def find(b: int) -> int:
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        return b

    linked = 0
    for i in range(len(order)):
        if ends[i] <= i + 1:
            continue
        a = order[i]
        others = order[i + 1 : ends[i]]
        hit = others[np.all((lo[others] < hi[a]) & (lo[a] < hi[others]), axis=1)]
        for b in hit.tolist():
            parent[find(int(a))] = find(int(b))
        linked += len(hit)
        if linked > 4 * MAX_UNION_BODIES:
            return (
                0.0,
                linked,
                (
                    f"more than {MAX_UNION_BODIES} solid bodies overlap one another; "
                    "merge them into one solid (a boolean union) before exporting"
                ),
            )
    groups: dict[int, list[int]] = {}
    for b in parent:
        groups.setdefault(find(b), []).append(b)
    clusters = [g for g in groups.values() if len(g) > 1]
    if not clusters:
        return 0.0, 0, ""
    if sum(len(g) for g in clusters) > MAX_UNION_BODIES:
        return (
            0.0,
            sum(len(g) for g in clusters),
            (
                f"more than {MAX_UNION_BODIES} solid bodies overlap one another; merge them into "
                "one solid (a boolean union) before exporting"
            ),
        )
    manifold3d = MissingDependency.require("manifold3d", "mesh")
    excess = 0.0
    overlapping = 0
    # Faces grouped by body once (not one pass over every face per body).
    by_body = np.argsort(labels, kind="stable")
    first_face = np.searchsorted(labels[by_body], np.arange(len(body_volumes) + 1))
    for cluster in clusters:
        parts = []
        for b in cluster:
            own = faces[by_body[first_face[b] : first_face[b + 1]]]
            used, inverse = np.unique(own, return_inverse=True)
            part = manifold3d.Manifold(
                manifold3d.Mesh64(
                    vert_properties=np.ascontiguousarray(vertices[used], dtype=np.float64),
                    tri_verts=np.ascontiguousarray(inverse.reshape(-1, 3), dtype=np.uint64),
                )
            )
            if part.status() != manifold3d.Error.NoError:
                return (
                    0.0,
                    len(cluster),
                    (f"body {b} is not a clean solid for the overlap check ({part.status()})"),
                )
            parts.append(part)
        union = manifold3d.Manifold.batch_boolean(parts, manifold3d.OpType.Add).volume()
        extra = float(sum(body_volumes[b] for b in cluster) - union)
        if extra > 1e-9 * max(float(union), 1e-300):
            excess += extra
            overlapping += len(cluster)
    return excess, overlapping, ""


def _tol(target: float, abs_tol: float, rel_tol: float) -> float:
    return max(abs_tol, rel_tol * abs(target))


def check_extents(np: Any, extents: Any, spec: dict[str, Any]) -> dict[str, Any]:
    target = np.asarray(spec["target"], dtype=float)
    got = np.asarray(extents, dtype=float)
    if spec.get("any_order"):
        order_t, order_g = np.sort(target), np.sort(got)
    else:
        order_t, order_g = target, got
    tol = np.maximum(spec.get("abs_tol", 0.0), spec.get("rel_tol", 0.01) * np.abs(order_t))
    diff = order_g - order_t
    bad = np.abs(diff) > tol
    if not bad.any():
        return _check("extents", True, f"extents {_vec(got)} match", got.tolist(), target.tolist())
    axes = "xyz" if not spec.get("any_order") else ("smallest", "middle", "largest")
    parts = [
        f"{axes[i]} off by {_fmt(float(diff[i]))} (tol {_fmt(float(tol[i]))})"
        for i in range(3)
        if bad[i]
    ]
    msg = f"extents are {_vec(got)}, expected {_vec(target)}: " + ", ".join(parts)
    return _check("extents", False, msg, got.tolist(), target.tolist())


def check_bbox(np: Any, bounds: Any, spec: dict[str, Any]) -> dict[str, Any]:
    lo_t, hi_t = np.asarray(spec["min"], float), np.asarray(spec["max"], float)
    tol = np.maximum(spec.get("abs_tol", 0.0), spec.get("rel_tol", 0.01) * np.abs(hi_t - lo_t))
    got = np.asarray(bounds, dtype=float)
    d_lo, d_hi = got[0] - lo_t, got[1] - hi_t
    bad = [
        f"{side} {ax} off by {_fmt(float(d[i]))} (tol {_fmt(float(tol[i]))})"
        for side, d in (("min", d_lo), ("max", d_hi))
        for i, ax in enumerate("xyz")
        if abs(d[i]) > tol[i]
    ]
    measured = {"min": got[0].tolist(), "max": got[1].tolist()}
    target = {"min": lo_t.tolist(), "max": hi_t.tolist()}
    if not bad:
        return _check("bbox", True, "bounding box matches", measured, target)
    msg = f"bounding box is [{_vec(got[0])}] .. [{_vec(got[1])}]: " + ", ".join(bad)
    return _check("bbox", False, msg, measured, target)


def check_scalar(name: str, value: float | None, spec: dict[str, Any], unit: str) -> dict[str, Any]:
    if value is None or not math.isfinite(value):
        return _check(name, False, f"{name} is undefined (the mesh is not a closed volume)")
    problems: list[str] = []
    target = spec.get("target")
    if target is not None:
        tol = _tol(target, spec.get("abs_tol", 0.0), spec.get("rel_tol", 0.01))
        diff = value - target
        if abs(diff) > tol:
            pct = f", {100 * diff / target:+.3g}%" if target else ""
            problems.append(
                f"{name} is {_fmt(value)}{unit}, expected {_fmt(target)}{unit} "
                f"(off by {_fmt(diff)}{pct}; tol {_fmt(tol)})"
            )
    lo, hi = spec.get("min"), spec.get("max")
    if lo is not None and value < lo:
        problems.append(f"{name} is {_fmt(value)}{unit}, below the minimum {_fmt(lo)}{unit}")
    if hi is not None and value > hi:
        problems.append(f"{name} is {_fmt(value)}{unit}, above the maximum {_fmt(hi)}{unit}")
    ok = not problems
    msg = f"{name} {_fmt(value)}{unit} ok" if ok else "; ".join(problems)
    return _check(name, ok, msg, value, {k: v for k, v in spec.items() if v is not None})


def check_count(name: str, value: int | float | None, spec: Any, what: str) -> dict[str, Any]:
    if value is None:
        return _check(name, False, f"{name} is undefined on an open mesh")
    if isinstance(spec, int):
        spec = {"target": spec}
    target, lo, hi = spec.get("target"), spec.get("min"), spec.get("max")
    shown = int(value) if float(value).is_integer() else value
    if target is not None and value != target:
        return _check(name, False, f"{name} is {shown}, expected {target} {what}", value, target)
    if lo is not None and value < lo:
        return _check(name, False, f"{name} is {shown}, expected at least {lo} {what}", value, lo)
    if hi is not None and value > hi:
        return _check(name, False, f"{name} is {shown}, expected at most {hi} {what}", value, hi)
    return _check(name, True, f"{name} {shown} ok", value, spec)


def check_units(
    np: Any, extents: Any, constraints: dict[str, Any], declared: str | None
) -> dict[str, Any]:
    spec = constraints["units"]
    if isinstance(spec, str):
        spec = {"unit": spec}
    unit = spec.get("unit", "mm")
    size = float(np.max(extents))
    expected: float | None = None
    if constraints.get("extents"):
        expected = float(np.max(constraints["extents"]["target"]))
    elif constraints.get("bbox"):
        b = constraints["bbox"]
        expected = float(np.max(np.asarray(b["max"]) - np.asarray(b["min"])))
    size_range = spec.get("size_range")
    note = f" (file declares {declared}, converted)" if declared else ""
    if size_range is not None:
        lo, hi = float(size_range[0]), float(size_range[1])
        if lo <= size <= hi:
            return _check("units", True, f"size {_fmt(size)} {unit} is plausible{note}", size)
        fits = [
            u for u, mm in UNIT_MM.items() if u != unit and lo <= size * mm / UNIT_MM[unit] <= hi
        ]
        hint = f"; it fits if the file is in {' or '.join(fits)}" if fits else ""
        return _check(
            "units",
            False,
            f"largest extent {_fmt(size)} is outside the plausible range "
            f"[{_fmt(lo)}, {_fmt(hi)}] {unit}{hint}",
            size,
            [lo, hi],
        )
    assert expected is not None  # the spec validator guarantees a size
    if size <= 0 or expected <= 0:
        return _check("units", False, "the part has zero size", size, expected)
    ratio = size / expected
    # Which unit would a modeller have to have used for the numbers to come out like this?
    best = min(UNIT_MM, key=lambda u: abs(math.log(ratio * UNIT_MM[u] / UNIT_MM[unit])))
    if best == unit or abs(math.log(ratio)) < math.log(2.0):
        return _check("units", True, f"scale matches {unit}{note}", ratio, 1.0)
    factor = UNIT_MM[best] / UNIT_MM[unit]
    return _check(
        "units",
        False,
        f"the part is {_fmt(ratio)}x the expected size: it looks modelled in {best}, "
        f"not {unit} (scale it by {_fmt(factor)})",
        ratio,
        1.0,
    )


def _samples(trimesh: Any, mesh: Any, count: int, seed: int) -> tuple[Any, Any]:
    points, face_idx = trimesh.sample.sample_surface(mesh, count, seed=seed)
    return points, face_idx


def check_mirror(
    np: Any, trimesh: Any, mesh: Any, spec: dict[str, Any], seed: int
) -> dict[str, Any]:
    from scipy.spatial import cKDTree

    plane = spec.get("plane", "yz")
    label = plane if isinstance(plane, str) else "plane"
    name = f"mirror_symmetry[{label}]"
    normal = np.asarray(_AXIS_NORMALS[plane] if isinstance(plane, str) else plane, float)
    if not np.linalg.norm(normal) > 0:
        return _check(name, False, "mirror plane normal is zero")
    normal = normal / np.linalg.norm(normal)
    through = spec.get("through", "center")
    if through == "center":
        point = mesh.bounds.mean(axis=0)
    elif through == "origin":
        point = np.zeros(3)
    else:
        point = np.asarray(through, float)
    diag = float(np.linalg.norm(mesh.extents))
    if not (math.isfinite(diag) and diag > 0):
        return _check(name, False, f"the part's size ({_fmt(diag)}) cannot be measured")
    n = int(spec.get("samples", 4096))
    queries, _ = _samples(trimesh, mesh, n, seed)
    # A dense, area-weighted sample of the surface stands in for it (the self-distance floor
    # is reported). Vertices are not added: zero- or tiny-area faces ("pillows") placed at
    # mirrored positions would stand in for surface that is not there.
    dense, _ = _samples(trimesh, mesh, min(max(25 * n, 50_000), 250_000), seed + 1)
    tree = cKDTree(dense)
    reflected = queries - 2.0 * np.outer((queries - point) @ normal, normal)
    d, _ = tree.query(reflected, k=1)
    floor, _ = tree.query(_samples(trimesh, mesh, n, seed + 2)[0], k=1)
    rel = float(np.mean(d)) / diag
    tol = float(spec.get("tol", 0.01))
    measured = {
        "mean_rel": rel,
        "max_rel": float(np.max(d)) / diag,
        "floor_rel": float(np.mean(floor)) / diag,
    }
    if rel <= tol:
        return _check(
            name, True, f"symmetric about {label} (deviation {rel:.3g} of size)", measured, tol
        )
    msg = (
        f"not mirror-symmetric about {label}: the reflected surface is on average "
        f"{rel:.3g} of the part's diagonal away (max {measured['max_rel']:.3g}; tol {tol:.3g})"
    )
    return _check(name, False, msg, measured, tol)


def check_thickness(np: Any, trimesh: Any, mesh: Any, spec: Any, seed: int) -> dict[str, Any]:
    from ._geometry import first_hits

    if not isinstance(spec, dict):
        spec = {"value": float(spec)}
    value = float(spec["value"])
    n = int(spec.get("samples", 1024))
    allowed = float(spec.get("allowed_fraction", 0.0))
    points, face_idx = _samples(trimesh, mesh, n, seed)
    normals = np.asarray(mesh.face_normals)[face_idx]
    dist = first_hits(mesh.vertices, mesh.faces, points, -normals, value)
    thin = np.isfinite(dist)
    frac = float(thin.mean()) if len(dist) else 0.0
    worst = float(dist[thin].min()) if thin.any() else None
    measured = {"min": worst, "thin_fraction": frac, "samples": int(len(dist))}
    if frac <= allowed:
        shown = f"min sampled {_fmt(worst)}" if worst is not None else f">= {_fmt(value)}"
        return _check(
            "min_thickness", True, f"wall thickness {shown} everywhere sampled", measured, value
        )
    where = points[thin][np.argmin(dist[thin])]
    msg = (
        f"wall too thin: {_fmt(worst or 0.0)} at ({_vec(where)}), required {_fmt(value)} "
        f"({100 * frac:.3g}% of {len(dist)} sampled points below; allowed {100 * allowed:.3g}%)"
    )
    return _check("min_thickness", False, msg, measured, value)


def check_points(
    np: Any, mesh: Any, points: list[list[float]], want_inside: bool
) -> dict[str, Any]:
    from ._geometry import contains

    name = "inside" if want_inside else "outside"
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    inside = contains(mesh.vertices, mesh.faces, pts)
    wrong = np.nonzero(inside != want_inside)[0]
    if len(wrong) == 0:
        return _check(name, True, f"all {len(pts)} points are {name} the part", 0, len(pts))
    listed = ", ".join(f"({_vec(pts[i])})" for i in wrong[:5])
    more = f" and {len(wrong) - 5} more" if len(wrong) > 5 else ""
    state = "outside" if want_inside else "inside"
    msg = f"{len(wrong)} of {len(pts)} points that must be {name} the part are {state}: {listed}{more}"
    return _check(name, False, msg, int(len(wrong)), len(pts))


def _obstacle_sdf(np: Any, ob: dict[str, Any], p: Any) -> Any:
    if ob.get("box"):
        lo, hi = np.asarray(ob["box"]["min"], float), np.asarray(ob["box"]["max"], float)
        c, h = (lo + hi) / 2, np.abs(hi - lo) / 2
        q = np.abs(p - c) - h
        return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
    if ob.get("sphere"):
        c = np.asarray(ob["sphere"]["center"], float)
        return np.linalg.norm(p - c, axis=1) - float(ob["sphere"].get("radius", 0.0))
    return np.linalg.norm(p - np.asarray(ob["point"], float), axis=1)


def _obstacle_center(np: Any, ob: dict[str, Any]) -> Any:
    if ob.get("box"):
        return (np.asarray(ob["box"]["min"], float) + np.asarray(ob["box"]["max"], float)) / 2
    if ob.get("sphere"):
        return np.asarray(ob["sphere"]["center"], float)
    return np.asarray(ob["point"], float)


def _surface_distance(np: Any, trimesh: Any, mesh: Any, point: Any) -> float:
    """Exact distance from one point to the surface (all faces, in bounded chunks)."""
    triangles = np.asarray(mesh.triangles)
    best = math.inf
    for lo in range(0, len(triangles), 200_000):
        chunk = triangles[lo : lo + 200_000]
        closest = trimesh.triangles.closest_point(chunk, np.repeat(point[None], len(chunk), axis=0))
        best = min(best, float(np.min(np.linalg.norm(closest - point, axis=1))))
    return best


def check_clearance(
    np: Any, trimesh: Any, mesh: Any, spec: dict[str, Any], seed: int, closed: bool
) -> dict[str, Any]:
    from ._geometry import contains

    need = float(spec.get("min", 0.0))
    samples, _ = _samples(trimesh, mesh, int(spec.get("samples", 20_000)), seed)
    surface = np.vstack([np.asarray(mesh.vertices), samples])
    results = []
    for i, ob in enumerate(spec["obstacles"]):
        label = ob.get("name") or f"obstacle {i + 1}"
        if ob.get("box"):
            gap = float(np.min(_obstacle_sdf(np, ob, surface)))
        else:  # spheres and points: exact distance from the centre to the surface
            radius = float(ob["sphere"].get("radius", 0.0)) if ob.get("sphere") else 0.0
            gap = _surface_distance(np, trimesh, mesh, _obstacle_center(np, ob)) - radius
        if (
            closed
            and gap > 0
            and bool(contains(mesh.vertices, mesh.faces, _obstacle_center(np, ob)[None])[0])
        ):
            gap = -gap  # the obstacle sits wholly inside the part
        results.append((label, gap))
    bad = [(label, g) for label, g in results if g < need]
    measured = {label: g for label, g in results}
    if not bad:
        worst = min(g for _, g in results)
        return _check("clearance", True, f"clearance {_fmt(worst)} >= {_fmt(need)}", measured, need)
    parts = [
        f"{label}: {'intersects the part' if g < 0 else f'gap {_fmt(g)}'} (needs {_fmt(need)}, short by {_fmt(need - g)})"
        for label, g in bad
    ]
    return _check("clearance", False, "too close to obstacles: " + "; ".join(parts), measured, need)


# -- reference similarity ---------------------------------------------------------------------


def _normalized(np: Any, mesh: Any) -> Any:
    """A copy translated to the bounding-box centre and scaled to a unit largest extent."""
    m = mesh.copy()
    m.apply_translation(-m.bounds.mean(axis=0))
    size = float(np.max(m.extents))
    if size > 0:
        m.apply_scale(1.0 / size)
    return m


def chamfer_cad_recode(np: Any, trimesh: Any, a: Any, b: Any, n: int, seed: int) -> float:
    """CAD-Recode / Text2CAD Chamfer: both meshes normalised to the unit cube, ``n`` surface
    samples each, mean squared nearest-neighbour distance both ways (summed), x1000."""
    from scipy.spatial import cKDTree

    pa, _ = _samples(trimesh, _normalized(np, a), n, seed)
    pb, _ = _samples(trimesh, _normalized(np, b), n, seed + 1)
    d_ab, _ = cKDTree(pb).query(pa, k=1)
    d_ba, _ = cKDTree(pa).query(pb, k=1)
    return float((np.mean(d_ab**2) + np.mean(d_ba**2)) * 1000.0)


def volumetric_iou(np: Any, a: Any, b: Any, closed_a: bool, closed_b: bool) -> tuple[float, str]:
    """IoU by exact manifold3d booleans for two volumes, else by a 64^3 point grid."""
    if closed_a and closed_b:
        try:
            import manifold3d

            def to_manifold(m: Any) -> Any:
                mesh = manifold3d.Mesh(
                    vert_properties=np.ascontiguousarray(m.vertices, dtype=np.float32),
                    tri_verts=np.ascontiguousarray(m.faces, dtype=np.uint32),
                )
                return manifold3d.Manifold(mesh)

            ma, mb = to_manifold(a), to_manifold(b)
            if ma.status() == manifold3d.Error.NoError and mb.status() == manifold3d.Error.NoError:
                inter = (ma ^ mb).volume()
                union = (ma + mb).volume()
                if union > 0:
                    return float(inter / union), "manifold3d"
        except ImportError:
            pass
    from ._geometry import contains

    lo = np.minimum(a.bounds[0], b.bounds[0])
    hi = np.maximum(a.bounds[1], b.bounds[1])
    axes = [np.linspace(lo[k], hi[k], 64) for k in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    in_a = contains(a.vertices, a.faces, grid)
    in_b = contains(b.vertices, b.faces, grid)
    union = int(np.count_nonzero(in_a | in_b))
    return (float(np.count_nonzero(in_a & in_b)) / union if union else 0.0), "voxels"


def check_reference(
    np: Any, trimesh: Any, mesh: Any, closed: bool, ref: dict[str, Any], seed: int, max_faces: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    other, reason = load_mesh(Path(ref["path"]), ref["file_type"], max_faces)
    if other is None:
        raise BadInput(f"reference mesh unusable: {reason}")
    checks: list[dict[str, Any]] = []
    stats: dict[str, Any] = {}
    if ref.get("chamfer_max") is not None or ref.get("iou_min") is None:
        cd = chamfer_cad_recode(np, trimesh, mesh, other, int(ref.get("samples", 8192)), seed)
        stats["chamfer"] = cd
        limit = ref.get("chamfer_max")
        if limit is not None:
            ok = cd <= limit
            msg = f"Chamfer distance to the reference {cd:.4g} (x1000, unit cube)"
            msg += " ok" if ok else f" exceeds {limit:.4g} by {cd - limit:.4g}"
            checks.append(_check("chamfer", ok, msg, cd, limit))
    if ref.get("iou_min") is not None or ref.get("chamfer_max") is None:
        ref_topo = topology(np, other.faces, len(other.vertices))
        ref_closed = ref_topo["watertight"] and ref_topo["winding_consistent"] and other.volume > 0
        a, b = (
            (_normalized(np, mesh), _normalized(np, other))
            if ref.get("normalize", True)
            else (mesh, other)
        )
        iou, method = volumetric_iou(np, a, b, closed, bool(ref_closed))
        stats["iou"], stats["iou_method"] = iou, method
        limit = ref.get("iou_min")
        if limit is not None:
            ok = iou >= limit
            msg = f"IoU with the reference {iou:.4g} ({method})"
            msg += " ok" if ok else f" is below {limit:.4g} by {limit - iou:.4g}"
            checks.append(_check("iou", ok, msg, iou, limit))
    return checks, stats


# -- entry point ------------------------------------------------------------------------------


class _OverBudget(Exception):
    """The analysis used its CPU budget (raised between steps, turned into a gate failure)."""

    def __init__(self, step: str, used: float) -> None:
        super().__init__(step)
        self.step = step
        self.used = used


class _Budget:
    """CPU seconds the analysis may use, checked between steps.

    CPU time of this process, not wall time: a mesh whose analysis needs more CPU than the
    budget is too costly (the model's fail); a worker that merely waited for a loaded CPU
    has used little of it and runs into the wall-clock limit instead (the machine's error).
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.start = time.process_time()

    def check(self, step: str) -> None:
        if self.seconds is None:
            return
        used = time.process_time() - self.start
        if used > self.seconds:
            raise _OverBudget(step, used)


def analyze(payload: dict[str, Any]) -> dict[str, Any]:
    """Worker target: the gate, then every constraint in ``payload["constraints"]``.

    A mesh whose analysis needs more than ``payload["cpu_budget_s"]`` CPU seconds fails the
    gate with feedback naming the step (see :class:`_Budget`).
    """
    budget = _Budget(payload.get("cpu_budget_s"))
    try:
        return _analyze(payload, budget)
    except _OverBudget as over:
        return {
            "gate": {
                "passed": False,
                "reason": f"analysing this mesh took more than its {budget.seconds:g} CPU-second "
                f"budget ({over.used:.1f} s, during {over.step}): simplify it (fewer faces or "
                "bodies) so the checks can run",
            },
            "stats": {"cpu_s": over.used, "over_budget_at": over.step},
            "checks": [],
        }


def _analyze(payload: dict[str, Any], budget: _Budget) -> dict[str, Any]:
    np, trimesh = _imports()
    constraints: dict[str, Any] = payload.get("constraints") or {}
    need_closed = bool(constraints.get("closed", True))
    seed = int(payload.get("seed", 0))
    max_load = int(payload.get("max_load_faces", 5_000_000))
    mesh, reason = load_mesh(Path(payload["path"]), payload["file_type"], max_load)
    budget.check("loading")
    if mesh is None:
        return {"gate": {"passed": False, "reason": reason}, "stats": {}, "checks": []}
    vertices = np.asarray(mesh.vertices)
    if not np.all(np.isfinite(vertices)):
        bad = int(np.count_nonzero(~np.isfinite(vertices).all(axis=1)))
        return {
            "gate": {"passed": False, "reason": f"{bad} vertices are not finite (NaN or inf)"},
            "stats": {"faces": len(mesh.faces), "vertices": len(vertices)},
            "checks": [],
        }
    reach = float(np.max(np.abs(vertices))) if len(vertices) else 0.0
    if reach > MAX_COORDINATE:
        # Squares of coordinates near 1e154 overflow to inf (the diagonal, areas, volumes),
        # and a check dividing by an infinite size passes anything.
        return {
            "gate": {
                "passed": False,
                "reason": f"coordinates reach {_fmt(reach)}, beyond the ±{_fmt(MAX_COORDINATE)} "
                "this check analyses (scale the part to its real size)",
            },
            "stats": {"faces": len(mesh.faces), "vertices": len(vertices)},
            "checks": [],
        }
    declared = getattr(mesh, "units", None)
    units_spec = constraints.get("units")
    unit = (units_spec if isinstance(units_spec, str) else (units_spec or {}).get("unit")) or None
    if declared is not None and unit:
        if not _convertible(trimesh, declared):
            shown = repr(declared)[:40]
            return {
                "gate": {
                    "passed": False,
                    "reason": f"the file declares units {shown}, which cannot be converted to "
                    f"{unit}; declare one of {', '.join(_TRIMESH_UNITS.values())} or none",
                },
                "stats": {"faces": len(mesh.faces), "vertices": len(vertices)},
                "checks": [],
            }
        if declared != _TRIMESH_UNITS[unit]:
            mesh.convert_units(_TRIMESH_UNITS[unit])
    topo = topology(np, mesh.faces, len(mesh.vertices))
    budget.check("topology")
    labels = topo.pop("body_labels")
    all_vertices, all_faces = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    tri = np.asarray(mesh.vertices)[np.asarray(mesh.faces)]
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    face_area = np.linalg.norm(cross, axis=1) / 2
    area = float(face_area.sum())
    # Signed volume by the divergence theorem (what trimesh's mass properties compute),
    # per body too: a separate inside-out body would otherwise tune the total.
    per_face = np.einsum("ij,ij->i", tri[:, 0], cross) / 6
    body_volumes = np.bincount(labels, weights=per_face, minlength=topo["bodies"])
    signed = float(per_face.sum())
    del tri, cross, per_face
    volume = signed if topo["watertight"] else None
    # Zero-area faces (needles, pillows) are no surface: they neither extend the part nor
    # stand in for surface that is not there. Geometric checks see the mesh without them.
    solid = face_area > _DEGENERATE * max(area, 1e-300)
    if not solid.all():
        if not solid.any():
            return {
                "gate": {"passed": False, "reason": "every face has zero area"},
                "stats": {"faces": len(mesh.faces), "vertices": len(vertices)},
                "checks": [],
            }
        mesh = trimesh.Trimesh(
            np.asarray(mesh.vertices), np.asarray(mesh.faces)[solid], process=False
        )
        mesh.remove_unreferenced_vertices()
    inverted = (
        _stray_inverted_bodies(np, all_vertices, all_faces, labels, body_volumes)
        if topo["watertight"] and topo["winding_consistent"]
        else []
    )
    closed = bool(
        topo["watertight"]
        and topo["winding_consistent"]
        and topo["nonmanifold_vertices"] == 0
        and (volume or 0) > 0
        and not inverted
    )
    overlap, overlapping, overlap_problem = 0.0, 0, ""
    if closed:
        # Solid bodies that overlap count their shared volume once (the union's volume).
        overlap, overlapping, overlap_problem = _overlap_volume(
            np, all_vertices, all_faces, labels, body_volumes
        )
        budget.check("the overlap union")
        if overlap_problem:
            closed = False
        elif overlap and volume is not None:
            volume = volume - overlap
    stats: dict[str, Any] = {
        "faces": int(len(all_faces)),
        "vertices": int(len(all_vertices)),
        "bounds": np.asarray(mesh.bounds).tolist(),
        "extents": np.asarray(mesh.extents).tolist(),
        "area": area,
        "volume": volume,
        "closed": closed,
        "declared_units": declared,
        "degenerate_faces": int(np.count_nonzero(~solid)),
        "inverted_bodies": inverted,
        "overlapping_bodies": overlapping,
        "overlap_volume": overlap,
        **topo,
    }
    if need_closed and not closed:
        if not topo["watertight"]:
            why = "the mesh is not watertight (it has holes or non-manifold edges)"
        elif not topo["winding_consistent"]:
            why = "the faces are not consistently wound (some normals point inward)"
        elif topo["nonmanifold_vertices"]:
            why = (
                f"{topo['nonmanifold_vertices']} vertices are non-manifold (bodies touching at "
                "a single point); separate the bodies or merge them properly"
            )
        elif (volume or 0.0) <= 0:
            why = f"the enclosed volume is {_fmt(volume or 0.0)} (faces wound inside out?)"
        elif overlap_problem:
            why = overlap_problem
        else:
            why = (
                f"body {inverted[0]} is inside out (negative volume) and is not a cavity "
                "inside another body"
            )
        return {
            "gate": {"passed": False, "reason": f"not a closed volume: {why}"},
            "stats": stats,
            "checks": [],
        }
    unit_label = f" {unit}" if unit else ""
    checks: list[dict[str, Any]] = []
    c = constraints
    if c.get("extents"):
        checks.append(check_extents(np, mesh.extents, c["extents"]))
    if c.get("bbox"):
        checks.append(check_bbox(np, mesh.bounds, c["bbox"]))
    if c.get("volume"):
        checks.append(
            check_scalar(
                "volume", volume if closed else None, c["volume"], f"{unit_label}^3" if unit else ""
            )
        )
    if c.get("area"):
        checks.append(
            check_scalar("area", stats["area"], c["area"], f"{unit_label}^2" if unit else "")
        )
    if c.get("bodies") is not None:
        checks.append(check_count("bodies", topo["bodies"], c["bodies"], "separate bodies"))
    if c.get("genus") is not None:
        checks.append(
            check_count("genus", topo["genus"] if closed else None, c["genus"], "through holes")
        )
    if c.get("max_faces") is not None:
        limit = int(c["max_faces"])
        n_faces = stats["faces"]
        ok = n_faces <= limit
        msg = f"{n_faces} faces" + (
            " ok" if ok else f", over the budget of {limit} by {n_faces - limit}"
        )
        checks.append(_check("max_faces", ok, msg, n_faces, limit))
    if c.get("units"):
        checks.append(check_units(np, mesh.extents, c, declared))
    mirrors = c.get("mirror_symmetry")
    if mirrors:
        for m_spec in mirrors if isinstance(mirrors, list) else [mirrors]:
            checks.append(check_mirror(np, trimesh, mesh, m_spec, seed))
            budget.check("mirror_symmetry")
    if c.get("min_thickness") is not None:
        checks.append(check_thickness(np, trimesh, mesh, c["min_thickness"], seed))
        budget.check("min_thickness")
    if c.get("inside"):
        checks.append(check_points(np, mesh, c["inside"], True))
        budget.check("inside")
    if c.get("outside"):
        checks.append(check_points(np, mesh, c["outside"], False))
        budget.check("outside")
    if c.get("clearance"):
        checks.append(check_clearance(np, trimesh, mesh, c["clearance"], seed, closed))
        budget.check("clearance")
    ref = payload.get("reference")
    if ref:
        ref_checks, ref_stats = check_reference(np, trimesh, mesh, closed, ref, seed, max_load)
        checks.extend(ref_checks)
        budget.check("the reference comparison")
        stats["reference"] = ref_stats
    return {"gate": {"passed": True, "reason": ""}, "stats": stats, "checks": checks}
