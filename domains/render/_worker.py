"""The warm Blender worker: runs *inside* the sandbox, under Blender's Python (bpy venv or image).

This file is never imported by the host process. The host starts a Python that can import
``bpy`` (inside bubblewrap or a Docker container), sends this file's source as the first
message on stdin (so the image never goes stale against the library), and then talks
newline-delimited JSON: one job per line in, a ``ready`` line once, then one ``phase`` line
and one ``result`` line per job out.

Why two phases per job:

* **Phase A (untrusted)** runs in a child forked from this warm process, so it starts with
  ``bpy`` already imported (a fork costs ~15 ms; ``import bpy`` ~700 ms). The child drops its
  protocol pipes, takes rlimits (address space, CPU, file size, no core dumps), becomes its
  own process group, executes the model's script from a real file in a fresh namespace (so
  tracebacks name the model's own lines), and saves the scene to ``scene.blend``. A crash, an
  ``os.abort()``, an infinite loop or a memory bomb kills only that child.
* **Phase B (trusted)** runs in this process, which never executes model code: it opens
  ``scene.blend`` with scripts disabled, inspects it and renders it with Cycles on CPU. A
  script cannot forge the report, because the code that writes the report never ran in a
  process the script controlled. Cycles stays initialised across jobs, so a 64x64 render
  costs ~15 ms instead of ~120 ms in a fresh process.

Between jobs the process resets with ``read_factory_settings(use_empty=True)``. The host
recycles the worker after N jobs or any crash. Only stdlib, ``bpy`` and ``numpy`` are used.
"""

from __future__ import annotations

import base64
import ctypes
import json
import math
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

PROTOCOL = 1
SCRIPT_NAME = "scene.py"
MAX_LOG = 4000
MAX_OBJECTS = 300
RAY_GRID = 16


def _send(out: Any, message: dict[str, Any]) -> None:
    out.write(json.dumps(message, separators=(",", ":"), allow_nan=False).encode() + b"\n")
    out.flush()


def _vm_size_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _set_undumpable() -> None:
    """PR_SET_DUMPABLE=0: children running model code cannot ptrace or read this process."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        pass


def _sweep_strays() -> None:
    """Kill every process in this PID namespace but us, init and our ancestors.

    Only enabled (``VERIFIERS_BLENDER_SWEEP=1``) when the launcher gave the worker its own
    PID namespace; a script that daemonised itself with ``setsid`` escapes the process-group
    kill but not this.
    """
    if os.environ.get("VERIFIERS_BLENDER_SWEEP") != "1":
        return
    keep = {1, os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in keep:
        keep.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in keep:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


# -- phase A: the model's script, in a forked child ------------------------------------------


def _child_run_script(job_dir: str, job: dict[str, Any], vm_base: int, keep_fds: set[int]) -> None:
    """Body of the forked child. Never returns: always ``os._exit``."""
    status = 3
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        log = os.open(os.path.join(job_dir, "output.log"), os.O_WRONLY | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        for fd in keep_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        memory = int(job.get("memory_mb", 1024)) * 1024 * 1024
        cpu = int(math.ceil(float(job.get("timeout_s", 60)))) + 1
        resource.setrlimit(resource.RLIMIT_AS, (vm_base + memory, vm_base + memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        fsize = int(job.get("file_mb", 256)) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if os.getuid() == 0:  # only when run without a user namespace (rlimits-only mode)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
        os.chdir(job_dir)
        status = 4
        report = _exec_script(job_dir)
        with open(os.path.join(job_dir, "phase_a.json"), "w") as fh:
            json.dump(report, fh)
        status = 0
    except Exception:  # the child reports through files only; never back into the worker loop
        traceback.print_exc()
    finally:
        os._exit(status)


def _exec_script(job_dir: str) -> dict[str, Any]:
    """Execute the model's script in a fresh namespace, then save the scene it built."""
    import builtins

    import bpy

    path = os.path.join(job_dir, SCRIPT_NAME)
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__file__": path,
        "__builtins__": builtins,
    }
    sys.argv = [path]
    error: dict[str, Any] | None = None
    started = time.monotonic()
    try:
        code = compile(source, path, "exec")
        exec(code, namespace)  # noqa: S102 - model code, inside the sandbox, in a forked child
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = _describe(exc, path)
    except Exception as exc:
        error = _describe(exc, path)
    script_s = time.monotonic() - started
    sys.stdout.flush()
    sys.stderr.flush()
    saved = True
    save_error = ""
    try:
        bpy.ops.wm.save_as_mainfile(
            filepath=os.path.join(job_dir, "scene.blend"), copy=True, compress=False
        )
    except Exception as exc:
        saved = False
        save_error = f"{type(exc).__name__}: {exc}"
    return {
        "ok": error is None,
        "error": error,
        "saved": saved,
        "save_error": save_error,
        "script_s": script_s,
    }


def _describe(exc: BaseException, path: str) -> dict[str, Any]:
    frames = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == path:
            frames.append({"line": frame.lineno, "func": frame.name, "text": frame.line or ""})
    if isinstance(exc, SyntaxError) and exc.filename == path:
        frames.append({"line": exc.lineno, "func": "<module>", "text": (exc.text or "").strip()})
    message = str(exc)
    if isinstance(exc, MemoryError) and not message:
        message = "out of memory (the job's memory limit was reached)"
    return {"type": type(exc).__name__, "message": message[:1000], "frames": frames[-5:]}


def _wait_child(pid: int, timeout: float) -> tuple[str, int, float]:
    """Wait for the child; kill its process group on timeout. Returns (how, code, rss_mb)."""
    deadline = time.monotonic() + timeout
    how = "exit"
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                how = "timeout"
                break
            ready, _, _ = select.select([pidfd], [], [], left)
            if ready:
                break
    finally:
        os.close(pidfd)
    if how == "timeout":
        for target in (-pid, pid):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
    _, status, usage = os.wait4(pid, 0)
    try:
        os.kill(-pid, signal.SIGKILL)  # anything the script left behind in its group
    except OSError:
        pass
    _sweep_strays()
    rss_mb = usage.ru_maxrss / 1024.0
    if how == "timeout":
        return how, 0, rss_mb
    if os.WIFSIGNALED(status):
        return "signal", os.WTERMSIG(status), rss_mb
    return "exit", os.WEXITSTATUS(status), rss_mb


def _phase_a(job_dir: str, job: dict[str, Any], proto_fds: set[int]) -> dict[str, Any]:
    vm_base = _vm_size_bytes()
    started = time.monotonic()
    if os.getuid() == 0:
        os.chown(job_dir, 65534, 65534)
        for name in os.listdir(job_dir):
            os.chown(os.path.join(job_dir, name), 65534, 65534)
    pid = os.fork()
    if pid == 0:
        _child_run_script(job_dir, job, vm_base, proto_fds)
    how, code, rss_mb = _wait_child(pid, float(job.get("timeout_s", 60)))
    result: dict[str, Any] = {
        "how": how,
        "code": code,
        "seconds": time.monotonic() - started,
        "max_rss_mb": rss_mb,
        "log_tail": _tail(os.path.join(job_dir, "output.log")),
    }
    report_path = os.path.join(job_dir, "phase_a.json")
    if how == "exit" and code == 0 and os.path.isfile(report_path):
        try:
            with open(report_path) as fh:
                data = json.load(fh)
            result["report"] = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            result["report"] = {}
    return result


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - MAX_LOG))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


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


def _object_geometry(obj: Any, depsgraph: Any, np: Any) -> dict[str, Any]:
    """World-space bbox and finiteness of an object's evaluated geometry."""
    info: dict[str, Any] = {"verts": 0, "verts_finite": True}
    mw = obj.matrix_world
    if obj.type == "MESH" and len(obj.data.vertices) > 0:
        raw = np.empty(len(obj.data.vertices) * 3, dtype=np.float64)
        obj.data.vertices.foreach_get("co", raw)
        if not _np_finite(np, raw):
            info["verts_finite"] = False
    coords = None
    if obj.type in {"MESH", "CURVE", "SURFACE", "FONT", "META", "CURVES", "POINTCLOUD"}:
        try:
            evaluated = obj.evaluated_get(depsgraph)
            mesh = evaluated.to_mesh()
        except Exception:
            mesh = None
        if mesh is not None:
            try:
                n = len(mesh.vertices)
                info["verts"] = n
                if n:
                    co = np.empty(n * 3, dtype=np.float64)
                    mesh.vertices.foreach_get("co", co)
                    coords = co.reshape(n, 3)
            finally:
                evaluated.to_mesh_clear()
    if coords is None and obj.type not in {"EMPTY", "CAMERA", "LIGHT", "LIGHT_PROBE", "SPEAKER"}:
        coords = np.array([tuple(c) for c in obj.bound_box], dtype=np.float64)
    if coords is not None and len(coords):
        if not _np_finite(np, coords):
            info["verts_finite"] = False
        m = np.array([list(row) for row in mw], dtype=np.float64)
        world = coords @ m[:3, :3].T + m[:3, 3]
        if _np_finite(np, world):
            info["bbox_min"] = [float(x) for x in world.min(axis=0)]
            info["bbox_max"] = [float(x) for x in world.max(axis=0)]
    return info


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
    records = []
    nonfinite: list[str] = []
    for obj in objects:
        rec: dict[str, Any] = {
            "name": obj.name,
            "type": obj.type,
            "location": _vec(obj.matrix_world.translation),
            "hide_render": bool(obj.hide_render),
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
    png = os.path.join(out_dir, "render.png")
    started = time.monotonic()
    bpy.ops.render.render(write_still=False)
    result = bpy.data.images.get("Render Result")
    if result is None:
        return {"ok": False, "error": "Blender produced no render result"}
    result.save_render(filepath=png, scene=scene)
    info: dict[str, Any] = {"ok": True, "seconds": time.monotonic() - started}
    if os.path.isfile(png):
        with open(png, "rb") as fh:
            info["png_b64"] = base64.b64encode(fh.read()).decode()
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
    chunks = []
    names = []
    total = 0
    for obj in bpy.context.scene.objects:
        if obj.type not in GEOMETRY or obj.hide_render:
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
    blob = b"verifiers render.blender scene export".ljust(80, b" ")
    blob += np.uint32(len(tris)).tobytes() + data.tobytes()
    return {"stl_b64": base64.b64encode(blob).decode(), "objects": names, "faces": len(tris)}


def _phase_b(job_dir: str, job: dict[str, Any], out: Any) -> dict[str, Any]:
    import bpy
    import numpy as np

    _send(out, {"id": job.get("id"), "phase": "render"})
    started = time.monotonic()
    try:
        bpy.ops.wm.open_mainfile(
            filepath=os.path.join(job_dir, "scene.blend"), load_ui=False, use_scripts=False
        )
        scene_info = _inspect(np)
    except Exception as exc:  # the scene the script left behind is unreadable: its fault
        return {"scene_error": f"{type(exc).__name__}: {exc}"[:1000]}
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
        out_dir = tempfile.mkdtemp(prefix="out-", dir=os.path.dirname(job_dir))
        try:
            render_info = _render(job, out_dir, np)
        except Exception as exc:
            render_info = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1000]}
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
    return {"scene": scene_info, "render": render_info, "seconds": time.monotonic() - started}


def _reset() -> None:
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)


def _write_job(root: str, job: dict[str, Any]) -> str:
    job_dir = tempfile.mkdtemp(prefix="job-", dir=root)
    with open(os.path.join(job_dir, SCRIPT_NAME), "w", encoding="utf-8") as fh:
        fh.write(str(job.get("script", "")))
    for name, data in dict(job.get("files") or {}).items():
        base = os.path.basename(str(name))
        if base and base not in {SCRIPT_NAME, "scene.blend", "phase_a.json", "output.log"}:
            with open(os.path.join(job_dir, base), "wb") as fh:
                fh.write(base64.b64decode(str(data)))
    return job_dir


def _handle(job: dict[str, Any], root: str, out: Any, proto_fds: set[int]) -> dict[str, Any]:
    """Run both phases. Leaves Blender holding the model's scene: call ``_reset`` after."""
    job_dir = _write_job(root, job)
    try:
        phase_a = _phase_a(job_dir, job, proto_fds)
        reply: dict[str, Any] = {"id": job.get("id"), "result": True, "phase_a": phase_a}
        report = phase_a.get("report") or {}
        if (
            report.get("ok")
            and report.get("saved")
            and os.path.isfile(os.path.join(job_dir, "scene.blend"))
        ):
            reply.update(_phase_b(job_dir, job, out))
        return reply
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


def _warm_up(root: str) -> float:
    """Render a tiny scene once so Cycles' one-time setup is paid before the first job."""
    import bpy

    started = time.monotonic()
    bpy.ops.mesh.primitive_cube_add()
    bpy.ops.object.camera_add(location=(4.0, -4.0, 3.0), rotation=(1.1, 0.0, 0.8))
    bpy.context.scene.camera = bpy.context.object
    bpy.ops.object.light_add(type="SUN")
    out_dir = tempfile.mkdtemp(prefix="warm-", dir=root)
    try:
        import numpy as np

        _render({"render": {"resolution": [8, 8], "samples": 1}}, out_dir, np)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    _reset()
    return time.monotonic() - started


def main() -> int:
    # The protocol owns a private copy of stdout; Blender's own prints go to stderr.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    out = os.fdopen(proto_fd, "wb")
    inp = sys.stdin.buffer
    root = tempfile.mkdtemp(prefix="verifiers-blender-")
    os.chmod(root, 0o711)  # the script's child may run as another uid (rlimits-only mode)
    started = time.monotonic()
    import bpy

    _set_undumpable()
    _reset()
    warm_s = _warm_up(root)
    _send(
        out,
        {
            "ready": True,
            "protocol": PROTOCOL,
            "blender": bpy.app.version_string,
            "pid": os.getpid(),
            "startup_s": time.monotonic() - started,
            "warmup_s": warm_s,
        },
    )
    proto_fds = {proto_fd, 0}
    while True:
        line = inp.readline()
        if not line:
            return 0
        try:
            job = json.loads(line)
        except ValueError:
            _send(out, {"error": "bad job line"})
            continue
        started = time.monotonic()
        try:
            reply = _handle(job, root, out, proto_fds)
        except Exception as exc:
            reply = {
                "id": job.get("id"),
                "result": True,
                "worker_error": f"{type(exc).__name__}: {exc}"[:2000],
            }
        reply["worker_s"] = time.monotonic() - started
        _send(out, reply)
        # Back to an empty scene before the next fork; off the job's latency path.
        _reset()


if __name__ == "__main__":
    sys.exit(main())
