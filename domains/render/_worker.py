"""The render judge's in-sandbox program: runs *inside* the ``blender`` runtime, never on the host.

The host (``_verifier.py``) writes this file read-only into a sandbox session of the
``blender`` runtime and runs it with the runtime's Python. That runtime's runner has a zygote
that imported ``bpy`` and rendered once (``sandbox/images/blender/preload.py``), so each run is
a fork of a warm Blender: the fork is what makes render fast. Only stdlib, ``bpy`` and
``numpy`` are used. Two modes, in two *separate* sessions:

* ``python _worker.py script`` (**phase A, untrusted**): executes the model's ``scene.py``
  from a real file (tracebacks name the model's lines), packs the external images it
  references, saves ``scene.blend`` and writes ``phase_a.json``. The model's code runs in this
  very process, so nothing this mode writes is trusted: the host reads ``phase_a.json``
  defensively and uses it only for feedback (which exception, on which line). A forged
  report gains nothing: the verdict comes from phase B.
* ``python _worker.py judge`` (**phase B, trusted**): in a *fresh* session (new work dir,
  new process, nothing of phase A alive: the runner killed every process of the job and
  scrubbed its files before the session ended), opens the read-only ``scene.blend`` with
  scripts disabled, inspects it, renders it with Cycles on CPU and writes ``report.json``,
  ``render.png`` and, when asked, ``scene.stl``. The model's script never shares a process,
  a writable file or a signal path with this mode.

Both modes run under the sandbox's limits (memory, CPU, pids, file size, wall clock): the
judge's memory is bounded on every backend like any job's.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from typing import Any

SCRIPT_NAME = "scene.py"
BLEND_NAME = "scene.blend"
PHASE_A_REPORT = "phase_a.json"
JUDGE_JOB = "job.json"
JUDGE_REPORT = "report.json"
RENDER_PNG = "render.png"
MESH_STL = "scene.stl"
MAX_OBJECTS = 300
RAY_GRID = 16


def _import_bpy() -> Any:
    """``bpy``, reset to an empty scene when this process was not forked from the zygote."""
    fresh = "bpy" not in sys.modules
    import bpy

    if fresh:
        bpy.ops.wm.read_factory_settings(use_empty=True)
    return bpy


# -- phase A: the model's script (untrusted; this process is the model's) ----------------------


RUNTIME_BROKEN = 3
"""Exit status when ``bpy`` itself cannot be imported, before the model's code runs. The
host then probes the runtime in a session of its own (the script could exit 3 as well)."""


def run_script() -> int:
    """Execute ``scene.py``, save the scene; the report is feedback only."""
    try:
        bpy = _import_bpy()
    except Exception as exc:  # a broken runtime, not the model's doing
        sys.stderr.write(f"verifiers-render: cannot import bpy: {type(exc).__name__}: {exc}\n")
        return RUNTIME_BROKEN
    path = os.path.abspath(SCRIPT_NAME)
    report: dict[str, Any] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        source = fh.read()
    import builtins

    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": path, "__builtins__": builtins}
    sys.argv = [path]
    error: dict[str, Any] | None = None
    started = time.monotonic()
    try:
        exec(compile(source, path, "exec"), namespace)  # noqa: S102 - model code, sandboxed
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = _describe(exc, path)
    except Exception as exc:
        error = _describe(exc, path)
    report["script_s"] = time.monotonic() - started
    sys.stdout.flush()
    sys.stderr.flush()
    if error is None:
        # Images the script wrote next to itself travel inside the .blend: the judge runs in
        # a fresh work dir that holds nothing but the saved scene.
        try:
            bpy.ops.file.pack_all()
        except Exception:  # missing files stay unpacked and are reported as missing
            pass
    # A script that raised is judged by its error alone (the host never reads its scene), so
    # its scene is not saved: a failing rollout costs no save, and the host's read-back finds
    # no file to carry.
    saved, save_error = error is None, ""
    # Compressed (zstd): a fraction of the raw size, so the scene costs the runners and the
    # host less to carry to the judge for a few ms more here. Nothing trusts this file's form:
    # the model's process writes it, and the judge's reader takes any .blend, compressed or
    # not, under the judge's memory limit.
    if saved:
        try:
            bpy.ops.wm.save_as_mainfile(
                filepath=os.path.abspath(BLEND_NAME), copy=True, compress=True
            )
        except Exception as exc:
            saved, save_error = False, f"{type(exc).__name__}: {exc}"[:1000]
    report.update(ok=error is None, error=error, saved=saved, save_error=save_error)
    with open(PHASE_A_REPORT, "w", encoding="utf-8") as fh:
        json.dump(report, fh)
    return 0


def _describe(exc: BaseException, path: str) -> dict[str, Any]:
    frames = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == path:
            frames.append({"line": frame.lineno, "func": frame.name, "text": frame.line or ""})
    if isinstance(exc, SyntaxError) and exc.filename == path:
        frames.append({"line": exc.lineno, "func": "<module>", "text": (exc.text or "").strip()})
    try:
        message = str(exc)
    except Exception:  # a hostile __str__
        message = ""
    if isinstance(exc, MemoryError) and not message:
        message = "out of memory (the job's memory limit was reached)"
    return {"type": type(exc).__name__, "message": message[:1000], "frames": frames[-5:]}


# -- phase B: inspect and render, in this (trusted) process ----------------------------------


HUGE = 1e30  # Blender clamps inf to FLT_MAX (3.4e38) on assignment: treat that as inf too


def _finite(values: Any) -> bool:
    return all(math.isfinite(float(v)) and abs(float(v)) < HUGE for v in values)


def _np_finite(np: Any, array: Any) -> bool:
    return bool((np.isfinite(array) & (np.abs(array) < HUGE)).all())


def _matrix_finite(matrix: Any) -> bool:
    return all(_finite(row) for row in matrix)


def _vec(v: Any) -> list[float]:
    return [float(x) if math.isfinite(float(x)) else 0.0 for x in v]


MESH_LIKE = {"MESH", "CURVE", "SURFACE", "FONT", "META"}
MIN_TRIANGLE_AREA = 1e-12
"""World-space area below which a triangle is a degenerate sliver that renders nothing."""


def _object_geometry(obj: Any, depsgraph: Any, np: Any) -> dict[str, Any]:
    """World-space bbox, renderable triangle count and finiteness of an object's geometry.

    Only triangles with a world-space area above ``MIN_TRIANGLE_AREA`` count: loose
    vertices, edges, zero-area faces and zero-scale objects render nothing, so they neither
    make an object count nor stretch its bounding box (a mesh of two loose vertices would
    otherwise match any box).
    """
    info: dict[str, Any] = {"verts": 0, "faces": 0, "verts_finite": True}
    mw = obj.matrix_world
    if obj.type == "MESH" and len(obj.data.vertices) > 0:
        raw = np.empty(len(obj.data.vertices) * 3, dtype=np.float64)
        obj.data.vertices.foreach_get("co", raw)
        if not _np_finite(np, raw):
            info["verts_finite"] = False
    if obj.type not in MESH_LIKE:
        return info
    try:
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
    except Exception:
        return info
    if mesh is None:
        return info
    try:
        n = len(mesh.vertices)
        info["verts"] = n
        if not n:
            return info
        co = np.empty(n * 3, dtype=np.float64)
        mesh.vertices.foreach_get("co", co)
        co = co.reshape(n, 3)
        if not _np_finite(np, co):
            info["verts_finite"] = False
            return info
        mesh.calc_loop_triangles()
        t = len(mesh.loop_triangles)
        if not t:
            return info
        idx = np.empty(t * 3, dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", idx)
    finally:
        evaluated.to_mesh_clear()
    m = np.array([list(row) for row in mw], dtype=np.float64)
    with np.errstate(all="ignore"):
        world = co @ m[:3, :3].T + m[:3, 3]
        if not _np_finite(np, world):
            return info
        tris = world[idx.reshape(-1, 3)]
        areas = 0.5 * np.linalg.norm(
            np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1
        )
    good = np.isfinite(areas) & (areas > MIN_TRIANGLE_AREA)
    info["faces"] = int(good.sum())
    if info["faces"]:
        used = tris[good].reshape(-1, 3)
        info["bbox_min"] = [float(x) for x in used.min(axis=0)]
        info["bbox_max"] = [float(x) for x in used.max(axis=0)]
    return info


def _render_hidden(scene: Any) -> set[str]:
    """Names of objects the render never shows through their collections (hidden from the
    render or excluded from the view layer) or their own ray visibility."""
    shown: set[str] = set()

    def walk(layer: Any) -> None:
        collection = layer.collection
        if layer.exclude or collection.hide_render:
            return
        shown.update(o.name for o in collection.objects)
        for child in layer.children:
            walk(child)

    walk(bpy_view_layer(scene).layer_collection)
    hidden = {o.name for o in scene.objects if o.name not in shown}
    for obj in scene.objects:  # lights are never camera-visible: only geometry is judged so
        if obj.type not in GEOMETRY:
            continue
        if not getattr(obj, "visible_camera", True) or getattr(obj, "is_holdout", False):
            hidden.add(obj.name)
    return hidden


def bpy_view_layer(scene: Any) -> Any:
    """The view layer that renders (the first one; the judge renders only that)."""
    return scene.view_layers[0]


def _world_light(scene: Any) -> dict[str, Any]:
    world = scene.world
    if world is None:
        return {"exists": False, "emits": False, "strength": 0.0, "color": [0.0, 0.0, 0.0]}
    best: dict[str, Any] = {
        "exists": True,
        "emits": False,
        "strength": 0.0,
        "color": list(world.color)[:3],
    }
    tree = getattr(world, "node_tree", None)
    if tree is not None and getattr(world, "use_nodes", True):
        for node in tree.nodes:
            if node.type != "BACKGROUND":
                continue
            strength_in = node.inputs.get("Strength")
            color_in = node.inputs.get("Color")
            strength = float(strength_in.default_value) if strength_in is not None else 1.0
            linked = color_in is not None and color_in.is_linked
            color = [float(c) for c in color_in.default_value][:3] if color_in is not None else []
            emits = strength > 0 and (linked or max(color or [0.0]) > 1e-4)
            if emits or strength > best["strength"]:
                best.update(strength=strength, color=_vec(color), emits=bool(emits))
            if emits:
                break
    else:
        best["emits"] = max(world.color) > 1e-4
    return best


def _emissive_materials(objects: list[Any]) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    for obj in objects:
        for slot in getattr(obj, "material_slots", []):
            mat = slot.material
            if mat is None or mat.name in seen or mat.node_tree is None:
                continue
            seen.add(mat.name)
            for node in mat.node_tree.nodes:
                strength = None
                color = None
                if node.type == "EMISSION":
                    strength, color = node.inputs.get("Strength"), node.inputs.get("Color")
                elif node.type == "BSDF_PRINCIPLED":
                    strength = node.inputs.get("Emission Strength")
                    color = node.inputs.get("Emission Color")
                if strength is None or float(strength.default_value) <= 0:
                    continue
                if color is not None and (color.is_linked or max(color.default_value[:3]) > 1e-4):
                    names.append(mat.name)
                    break
    return names


def _missing_images() -> list[dict[str, str]]:
    import bpy

    missing = []
    for img in bpy.data.images:
        if img.source not in {"FILE", "SEQUENCE", "MOVIE"} or img.packed_file is not None:
            continue
        path = bpy.path.abspath(img.filepath, library=img.library)
        if not img.filepath or not os.path.isfile(path):
            missing.append({"image": img.name, "filepath": img.filepath})
    return missing


def _camera_hits(scene: Any, depsgraph: Any) -> tuple[list[str], int]:
    """Cast a grid of rays through the camera frame; which objects do they hit?"""
    from mathutils import Vector  # type: ignore[import-not-found]  # ships with bpy

    cam = scene.camera
    frame = [cam.matrix_world @ v for v in cam.data.view_frame(scene=scene)]
    # view_frame corners: top-right, bottom-right, bottom-left, top-left
    tr, br, bl, tl = frame
    origin = cam.matrix_world.translation
    forward = (cam.matrix_world.to_3x3() @ Vector((0.0, 0.0, -1.0))).normalized()
    ortho = cam.data.type == "ORTHO"
    hits: dict[str, int] = {}
    rays = 0
    for i in range(RAY_GRID):
        for j in range(RAY_GRID):
            u = (i + 0.5) / RAY_GRID
            v = (j + 0.5) / RAY_GRID
            point = bl.lerp(br, u).lerp(tl.lerp(tr, u), v)
            if ortho:
                start, direction = point, forward
            else:
                start, direction = origin, (point - origin).normalized()
            rays += 1
            ok, _loc, _n, _idx, obj, _m = scene.ray_cast(
                depsgraph, start, direction, distance=cam.data.clip_end
            )
            if ok and obj is not None:
                hits[obj.name] = hits.get(obj.name, 0) + 1
    return sorted(hits, key=lambda k: -hits[k]), rays


def _inspect(np: Any) -> dict[str, Any]:
    import bpy

    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    objects = list(scene.objects)
    hidden = _render_hidden(scene)
    records = []
    nonfinite: list[str] = []
    for obj in objects:
        rec: dict[str, Any] = {
            "name": obj.name,
            "type": obj.type,
            "location": _vec(obj.matrix_world.translation),
            "hide_render": bool(obj.hide_render) or obj.name in hidden,
        }
        # The stored matrix_world can predate the script's last edit: check the channels the
        # script sets and the matrix the depsgraph evaluates from them.
        channels = (obj.location, obj.rotation_euler, obj.rotation_quaternion, obj.scale)
        finite_matrix = all(_finite(c) for c in channels) and _matrix_finite(
            obj.evaluated_get(depsgraph).matrix_world
        )
        rec["matrix_finite"] = finite_matrix
        rec.update(_object_geometry(obj, depsgraph, np))
        if not finite_matrix or not rec["verts_finite"]:
            nonfinite.append(obj.name)
        if obj.type == "LIGHT":
            rec["energy"] = float(obj.data.energy) if math.isfinite(obj.data.energy) else 0.0
            rec["light_type"] = obj.data.type
        records.append(rec)
    lights = [
        r["name"]
        for r in records
        if r["type"] == "LIGHT" and not r["hide_render"] and r.get("energy", 0.0) > 0
    ]
    camera: dict[str, Any] = {"set": scene.camera is not None}
    camera["objects"] = [r["name"] for r in records if r["type"] == "CAMERA"]
    if scene.camera is not None:
        camera["name"] = scene.camera.name
        camera["type"] = scene.camera.type
        camera["finite"] = _matrix_finite(scene.camera.matrix_world)
        if scene.camera.type == "CAMERA" and camera["finite"]:
            seen, rays = _camera_hits(scene, depsgraph)
            camera["sees"] = seen[:50]
            camera["rays"] = rays
    return {
        "objects": records[:MAX_OBJECTS],
        "object_count": len(records),
        "nonfinite": nonfinite[:50],
        "lights": lights,
        "world": _world_light(scene),
        "emissive_materials": _emissive_materials(objects),
        "missing_images": _missing_images()[:50],
        "camera": camera,
    }


def _render(job: dict[str, Any], out_dir: str, np: Any) -> dict[str, Any]:
    import bpy

    scene = bpy.context.scene
    settings = job.get("render", {})
    width, height = settings.get("resolution", [64, 64])
    render = scene.render
    render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = int(settings.get("samples", 8))
    scene.cycles.use_denoising = bool(settings.get("denoise", False))
    scene.cycles.use_adaptive_sampling = False
    render.resolution_x = int(width)
    render.resolution_y = int(height)
    render.resolution_percentage = 100
    render.use_border = False
    render.film_transparent = False
    # The picture must be the render of the scene: no compositor or sequencer strip pasted
    # over it, and no exposure trick that brightens a black frame.
    render.use_compositing = False
    render.use_sequencer = False
    for index, layer in enumerate(scene.view_layers):  # what _render_hidden inspected
        layer.use = index == 0
    render.threads_mode = "FIXED"
    render.threads = max(1, int(settings.get("threads", 1)))
    view = scene.view_settings
    scene.display_settings.display_device = "sRGB"
    view.view_transform = "Standard"
    view.look = "None"
    view.exposure = 0.0
    view.gamma = 1.0
    view.use_curve_mapping = False
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    scene.render.image_settings.color_depth = "8"
    png = os.path.join(out_dir, RENDER_PNG)
    started = time.monotonic()
    bpy.ops.render.render(write_still=False)
    result = bpy.data.images.get("Render Result")
    if result is None:
        return {"ok": False, "error": "Blender produced no render result"}
    result.save_render(filepath=png, scene=scene)
    info: dict[str, Any] = {"ok": True, "seconds": time.monotonic() - started}
    info["png"] = RENDER_PNG if os.path.isfile(png) else None  # the host reads the file
    if settings.get("exr_check"):
        scene.render.image_settings.file_format = "OPEN_EXR"
        scene.render.image_settings.color_mode = "RGBA"
        scene.render.image_settings.color_depth = "32"
        exr = os.path.join(out_dir, "render.exr")
        result.save_render(filepath=exr, scene=scene)
        img = bpy.data.images.load(exr)
        pixels = np.empty(len(img.pixels), dtype=np.float32)
        img.pixels.foreach_get(pixels)
        info["exr"] = {
            "pixels": int(pixels.size // 4),
            "nonfinite": int((~np.isfinite(pixels)).sum()),
        }
        bpy.data.images.remove(img)
    return info


GEOMETRY = {"MESH", "CURVE", "SURFACE", "FONT", "META", "VOLUME", "CURVES", "POINTCLOUD"}


def _export_stl(spec: dict[str, Any], np: Any) -> dict[str, Any]:
    """Binary STL (world space, modifiers applied) of the matching renderable objects."""
    import fnmatch

    import bpy

    pattern = str(spec.get("objects", "*"))
    max_faces = int(spec.get("max_faces", 2_000_000))
    depsgraph = bpy.context.evaluated_depsgraph_get()
    hidden = _render_hidden(bpy.context.scene)
    chunks = []
    names = []
    total = 0
    for obj in bpy.context.scene.objects:
        if obj.type not in GEOMETRY or obj.hide_render or obj.name in hidden:
            continue
        if not fnmatch.fnmatchcase(obj.name, pattern):
            continue
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            mesh.calc_loop_triangles()
            n = len(mesh.loop_triangles)
            total += n
            if total > max_faces:
                return {"error": f"more than {max_faces} triangles in the selected objects"}
            if n == 0:
                continue
            co = np.empty(len(mesh.vertices) * 3, dtype=np.float64)
            mesh.vertices.foreach_get("co", co)
            idx = np.empty(n * 3, dtype=np.int64)
            mesh.loop_triangles.foreach_get("vertices", idx)
            m = np.array([list(row) for row in evaluated.matrix_world], dtype=np.float64)
            world = co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
            chunks.append(world[idx.reshape(-1, 3)])
            names.append(obj.name)
        finally:
            evaluated.to_mesh_clear()
    if not chunks:
        return {"error": f"no renderable geometry matches {pattern!r}", "objects": []}
    tris = np.concatenate(chunks).astype(np.float32)
    record = np.dtype([("n", "<f4", (3,)), ("v", "<f4", (3, 3)), ("a", "<u2")])
    data = np.zeros(len(tris), dtype=record)
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    data["n"] = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    data["v"] = tris
    with open(MESH_STL, "wb") as fh:
        fh.write(b"verifiers render.blender scene export".ljust(80, b" "))
        fh.write(np.uint32(len(tris)).tobytes())
        fh.write(data.tobytes())
    return {"stl": MESH_STL, "objects": names, "faces": len(tris)}


def judge() -> int:
    """Inspect and render ``scene.blend``; every stage's failure is reported, never raised."""
    started = time.monotonic()
    try:
        return _judge()
    except Exception as exc:  # a fault of the judge itself: the host makes it an error
        return _write_report({"judge_error": f"{type(exc).__name__}: {exc}"[:2000]}, started)


def _judge() -> int:
    import numpy as np

    bpy = _import_bpy()
    started = time.monotonic()
    with open(JUDGE_JOB, encoding="utf-8") as fh:
        job = json.load(fh)
    report: dict[str, Any] = {"blender": bpy.app.version_string}
    try:
        bpy.ops.wm.open_mainfile(
            filepath=os.path.abspath(BLEND_NAME), load_ui=False, use_scripts=False
        )
        scene_info = _inspect(np)
    except Exception as exc:  # the scene the script left behind is unreadable: its fault
        report["scene_error"] = f"{type(exc).__name__}: {exc}"[:1000]
        return _write_report(report, started)
    if job.get("mesh_export") is not None and not scene_info["nonfinite"]:
        try:
            scene_info["mesh_export"] = _export_stl(job["mesh_export"], np)
        except Exception as exc:
            scene_info["mesh_export"] = {"error": f"{type(exc).__name__}: {exc}"[:1000]}
    render_info: dict[str, Any]
    if not scene_info["camera"]["set"] or scene_info["camera"].get("type") != "CAMERA":
        render_info = {"ok": False, "skipped": True, "error": "no camera to render from"}
    elif scene_info["nonfinite"] or not scene_info["camera"].get("finite", False):
        render_info = {"ok": False, "skipped": True, "error": "scene has non-finite values"}
    else:
        try:
            render_info = _render(job, os.getcwd(), np)
        except Exception as exc:
            render_info = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1000]}
    report.update(scene=scene_info, render=render_info)
    return _write_report(report, started)


def _clean(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become None, text is valid UTF-8 (a scene's names
    and values are the model's: a NaN strength or an undecodable name must not break the
    report)."""
    if isinstance(value, dict):
        return {_clean(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def _write_report(report: dict[str, Any], started: float) -> int:
    report["seconds"] = time.monotonic() - started
    with open(JUDGE_REPORT, "w", encoding="utf-8") as fh:
        json.dump(_clean(report), fh, allow_nan=False)
    return 0


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else ""
    if mode == "script":
        return run_script()
    if mode == "judge":
        return judge()
    print(f"usage: _worker.py script|judge (got {mode!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
