"""Turn the judge's report into named checks, a reward and feedback (pure; no Blender here).

Gates (``spec.gates``) zero the reward when they are not fully met; by default the
structural ones: the script ran, the scene is finite, a camera exists and the render decodes.
Every other check is a component in [0, 1]; the reward is their mean when no gate failed.
``pass`` means every component is 1. See docs/render.md for the partial-credit trade-off.
"""

from __future__ import annotations

import base64
import fnmatch
import math
from typing import Any

from verifiers.domains.mesh._reuse import mesh_check

from verifiers.gates import CheckOutcome, gated_mean, signal_name
from verifiers.types import Result

from ._image import ImageStats, decode_png, image_stats, psnr, ssim
from ._spec import ObjectExpect, RenderSpec

__all__ = ["CheckOutcome", "GEOMETRY_TYPES", "evaluate", "no_script_result"]

GEOMETRY_TYPES = frozenset(
    {"MESH", "CURVE", "SURFACE", "FONT", "META", "VOLUME", "CURVES", "POINTCLOUD", "GREASEPENCIL"}
)


def _fmt(v: list[float] | tuple[float, ...]) -> str:
    return "(" + ", ".join(f"{x:.2f}" for x in v) + ")"


def _component_names(spec: RenderSpec) -> list[str]:
    return spec.component_names()


def no_script_result(spec: RenderSpec, message: str) -> Result:
    """The completion holds no script at all."""
    return Result.failed(message, components=dict.fromkeys(_component_names(spec), 0.0))


def _script_check(phase_a: dict[str, Any], spec: RenderSpec) -> CheckOutcome:
    how = phase_a.get("how")
    report = phase_a.get("report") or {}
    code = int(phase_a.get("code") or 0)
    if how == "timeout":
        return CheckOutcome(
            "script", 0.0, True, f"script timed out after {spec.timeout_s:g}s (an endless loop?)"
        )
    if how == "oom":
        return CheckOutcome(
            "script",
            0.0,
            True,
            f"script ran out of memory (limit: {spec.memory_mb} MB beyond Blender's own)",
        )
    if how == "signal":
        name = signal_name(code)
        return CheckOutcome(
            "script",
            0.0,
            True,
            f"Blender crashed with {name} while running your script (os.abort(), a crash "
            "inside bpy, or the memory limit)",
        )
    if how != "exit" or code != 0 or not report:
        return CheckOutcome(
            "script",
            0.0,
            True,
            f"script ended the process (exit status {code}) before the scene was saved: do not "
            "call os._exit() or kill the process",
        )
    error = report.get("error")
    if error:
        lines = ["script raised an exception:", "Traceback (your script's frames):"]
        for frame in error.get("frames", []):
            lines.append(f"  line {frame.get('line')}, in {frame.get('func')}: {frame.get('text')}")
        message = str(error.get("message", ""))
        if error.get("type") == "MemoryError":
            message = f"{message} (limit: {spec.memory_mb} MB)"
        lines.append(f"{error.get('type')}: {message}")
        return CheckOutcome("script", 0.0, True, "\n".join(lines))
    if not report.get("saved"):
        return CheckOutcome(
            "script",
            0.0,
            True,
            f"the scene could not be saved after your script: {report.get('save_error')}",
        )
    return CheckOutcome("script", 1.0, True)


def renderable(obj: dict[str, Any]) -> bool:
    """A geometry object that the render can show: not hidden (itself, its collections, its
    camera ray visibility) and with at least one triangle of non-zero world-space area.
    Loose vertices, edges, empty meshes, zero-area faces and zero-scale objects render
    nothing, so they never count as objects (``min_objects``, per-object expectations, what
    the camera sees)."""
    return (
        obj.get("type") in GEOMETRY_TYPES
        and not obj.get("hide_render")
        and int(obj.get("faces") or 0) > 0
    )


def _matches(expect: ObjectExpect, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Objects that meet ``expect``. Hidden objects and geometry without renderable faces
    never count: a model could otherwise satisfy "four legs" with empty meshes, two loose
    vertices spanning the expected box, or hidden stand-ins."""
    found = []
    for obj in objects:
        if obj.get("hide_render"):
            continue
        if obj.get("type") in GEOMETRY_TYPES and not renderable(obj):
            continue
        if expect.name is not None:
            glob = any(c in expect.name for c in "*?[")
            hit = (
                fnmatch.fnmatchcase(obj["name"], expect.name)
                if glob
                else obj["name"] == expect.name
            )
            if not hit:
                continue
        if expect.type is not None and obj["type"] != expect.type.upper():
            continue
        found.append(obj)
    return found


def _object_check(
    expect: ObjectExpect, index: int, objects: list[dict[str, Any]], seen: set[str]
) -> CheckOutcome:
    label = expect.label(index)
    what = (
        " ".join(p for p in (f"'{expect.name}'" if expect.name else "", expect.type or "") if p)
        or "any"
    )
    found = _matches(expect, objects)
    problems: list[str] = []
    names = ", ".join(o["name"] for o in found[:8]) or "none"
    if expect.count is not None and len(found) != expect.count:
        problems.append(f"expected {expect.count} object(s) {what}, found {len(found)} ({names})")
    elif expect.count is None and len(found) < expect.min_count:
        problems.append(
            f"expected at least {expect.min_count} object(s) {what}, found {len(found)}"
        )
    if found and expect.bbox is not None:
        boxed = [o for o in found if "bbox_min" in o]
        if not boxed:
            problems.append(f"{what} has no geometry to measure a bounding box on")
        else:
            lo = [min(o["bbox_min"][k] for o in boxed) for k in range(3)]
            hi = [max(o["bbox_max"][k] for o in boxed) for k in range(3)]
            tol = expect.bbox.tol
            off = max(
                max(abs(a - b) for a, b in zip(lo, expect.bbox.min, strict=True)),
                max(abs(a - b) for a, b in zip(hi, expect.bbox.max, strict=True)),
            )
            if off > tol:
                problems.append(
                    f"{what} bbox min {_fmt(lo)} max {_fmt(hi)}, expected min "
                    f"{_fmt(expect.bbox.min)} max {_fmt(expect.bbox.max)} within {tol:g} "
                    f"(off by {off:.3f})"
                )
    if found and expect.position is not None:
        loc = found[0]["location"]
        dist = math.dist(loc, expect.position)
        if dist > expect.position_tol:
            problems.append(
                f"{found[0]['name']} is at {_fmt(loc)}, expected {_fmt(expect.position)} "
                f"within {expect.position_tol:g} (off by {dist:.3f})"
            )
    if found and expect.visible and not any(o["name"] in seen for o in found):
        problems.append(f"the camera does not see {what}")
    if problems:
        return CheckOutcome(label, 0.0, False, "; ".join(problems))
    return CheckOutcome(label, 1.0)


def _scene_checks(scene: dict[str, Any], spec: RenderSpec) -> list[CheckOutcome]:
    out: list[CheckOutcome] = []
    camera = scene.get("camera", {})
    nonfinite = list(scene.get("nonfinite", []))
    if camera.get("set") and camera.get("finite") is False:
        nonfinite.append(str(camera.get("name")))
    out.append(
        CheckOutcome(
            "finite",
            0.0 if nonfinite else 1.0,
            True,
            f"non-finite (NaN/inf) transform or vertex coordinates in: {', '.join(nonfinite[:10])}"
            if nonfinite
            else "",
        )
    )
    counted = {o["name"] for o in scene.get("objects", []) if renderable(o)}
    seen = {name for name in camera.get("sees", []) if name in counted}
    if spec.expect.camera:
        if camera.get("set") and camera.get("type") == "CAMERA":
            out.append(CheckOutcome("camera", 1.0, True))
        elif camera.get("set"):
            out.append(
                CheckOutcome(
                    "camera",
                    0.0,
                    True,
                    f"scene.camera is a {camera.get('type')} object, not a camera",
                )
            )
        elif camera.get("objects"):
            out.append(
                CheckOutcome(
                    "camera",
                    0.0,
                    True,
                    f"camera object(s) {', '.join(camera['objects'][:5])} exist but "
                    "bpy.context.scene.camera is not set",
                )
            )
        else:
            out.append(
                CheckOutcome(
                    "camera", 0.0, True, "no camera: add one and set bpy.context.scene.camera"
                )
            )
        if seen:
            out.append(CheckOutcome("camera_view", 1.0))
        elif not camera.get("set"):
            out.append(CheckOutcome("camera_view", 0.0))  # the camera line says it all
        else:
            rays = camera.get("rays", 0)
            out.append(
                CheckOutcome(
                    "camera_view",
                    0.0,
                    False,
                    f"the camera sees no object ({rays} rays through its frame hit nothing): "
                    "aim it at the scene",
                )
            )
    lights = list(scene.get("lights", []))
    world = scene.get("world", {})
    emissive = list(scene.get("emissive_materials", []))
    sources = len(lights) + (1 if world.get("emits") else 0) + (1 if emissive else 0)
    if sources >= spec.expect.min_lights:
        out.append(CheckOutcome("lights", 1.0))
    else:
        world_text = (
            "no world"
            if not world.get("exists")
            else f"world strength {world.get('strength', 0):.2f} color {_fmt(world.get('color', []))}"
        )
        out.append(
            CheckOutcome(
                "lights",
                0.0,
                False,
                f"found {len(lights)} light(s) with energy > 0 (need {spec.expect.min_lights}); "
                f"{world_text}; {len(emissive)} emissive material(s)",
            )
        )
    missing = scene.get("missing_images", [])
    if missing:
        listed = ", ".join(f"'{m['image']}' -> {m['filepath'] or '(no path)'}" for m in missing[:5])
        out.append(CheckOutcome("textures", 0.0, False, f"image file(s) missing: {listed}"))
    else:
        out.append(CheckOutcome("textures", 1.0))
    objects = list(scene.get("objects", []))
    geometry = [o for o in objects if renderable(o)]
    if len(geometry) >= spec.expect.min_objects:
        out.append(CheckOutcome("objects", 1.0))
    else:
        out.append(
            CheckOutcome(
                "objects",
                0.0,
                False,
                f"found {len(geometry)} renderable object(s), need at least {spec.expect.min_objects}",
            )
        )
    for i, expect in enumerate(spec.expect.objects):
        out.append(_object_check(expect, i, objects, seen))
    return out


def _image_checks(
    render: dict[str, Any], spec: RenderSpec, reference: Any
) -> tuple[list[CheckOutcome], ImageStats | None, bytes | None]:
    out: list[CheckOutcome] = []
    png: bytes | None = None
    rgb = None
    if render.get("ok") and render.get("png_b64"):
        png = base64.b64decode(render["png_b64"])
        try:
            rgb = decode_png(png)
        except ValueError as exc:
            out.append(CheckOutcome("render", 0.0, True, str(exc)))
    elif render.get("skipped"):
        out.append(CheckOutcome("render", 0.0, True, f"not rendered: {render.get('error')}"))
    else:
        out.append(
            CheckOutcome(
                "render", 0.0, True, f"render failed: {render.get('error') or 'no output'}"
            )
        )
    if rgb is None:
        for name in ("not_blank", "not_black", "magenta"):
            out.append(CheckOutcome(name, 0.0))
        if spec.exr_check:
            out.append(CheckOutcome("exr", 0.0))
        if spec.reference_image is not None:
            out.append(CheckOutcome("reference", 0.0))
        return out, None, png
    width, height = spec.resolution
    if rgb.shape[1] != width or rgb.shape[0] != height:
        out.append(
            CheckOutcome(
                "render",
                0.0,
                True,
                f"render is {rgb.shape[1]}x{rgb.shape[0]}, expected {width}x{height}",
            )
        )
    else:
        out.append(CheckOutcome("render", 1.0, True))
    stats = image_stats(rgb)
    out.append(
        CheckOutcome(
            "not_blank",
            1.0 if stats.std_luminance > spec.min_std else 0.0,
            False,
            f"the image is blank: luminance std {stats.std_luminance:.4f} <= {spec.min_std:g} "
            "(nothing visible against the background)",
        )
    )
    out.append(
        CheckOutcome(
            "not_black",
            1.0 if stats.mean_luminance > spec.min_mean_luminance else 0.0,
            False,
            f"the image is black: mean luminance {stats.mean_luminance:.4f} <= "
            f"{spec.min_mean_luminance:g} (no light reaches the camera)",
        )
    )
    out.append(
        CheckOutcome(
            "magenta",
            1.0 if stats.magenta_fraction <= spec.max_magenta_fraction else 0.0,
            False,
            f"{stats.magenta_fraction:.1%} of pixels are missing-texture magenta "
            f"(max {spec.max_magenta_fraction:.1%})",
        )
    )
    if spec.exr_check:
        exr = render.get("exr") or {}
        bad = int(exr.get("nonfinite", -1))
        out.append(
            CheckOutcome(
                "exr",
                1.0 if bad == 0 else 0.0,
                False,
                f"the float render has {bad} NaN/inf channel values"
                if bad > 0
                else "no EXR output",
            )
        )
    if spec.reference_image is not None:
        ref = spec.reference_image
        if reference is None or reference.shape != rgb.shape:
            shape = "missing" if reference is None else f"{reference.shape[1]}x{reference.shape[0]}"
            out.append(
                CheckOutcome(
                    "reference",
                    0.0,
                    False,
                    f"reference image is {shape}, render is {width}x{height}",
                )
            )
        else:
            p, s = psnr(rgb, reference), ssim(rgb, reference)
            bad_p = ref.min_psnr is not None and p < ref.min_psnr
            bad_s = ref.min_ssim is not None and s < ref.min_ssim
            out.append(
                CheckOutcome(
                    "reference",
                    0.0 if bad_p or bad_s else 1.0,
                    False,
                    f"render differs from the reference: PSNR {p:.1f} dB (min {ref.min_psnr}), "
                    f"SSIM {s:.3f} (min {ref.min_ssim})",
                )
            )
    return out, stats, png


def evaluate(
    reply: dict[str, Any],
    spec: RenderSpec,
    reference: Any = None,
    mesh_answer: dict[str, Any] | None = None,
) -> Result:
    """Checks, reward and feedback from a worker reply (and the mesh analysis, if any)."""
    checks = [_script_check(reply.get("phase_a", {}), spec)]
    stats: ImageStats | None = None
    png: bytes | None = None
    scene = reply.get("scene")
    if checks[0].ok and reply.get("render_failure"):
        checks.append(CheckOutcome("render", 0.0, True, str(reply["render_failure"])))
    elif checks[0].ok and reply.get("scene_error"):
        checks.append(
            CheckOutcome(
                "finite",
                0.0,
                True,
                f"the saved scene could not be inspected: {reply['scene_error']}",
            )
        )
    elif checks[0].ok and scene is None:
        checks.append(
            CheckOutcome("finite", 0.0, True, "the saved scene could not be opened for inspection")
        )
    elif checks[0].ok and scene is not None:
        checks += _scene_checks(scene, spec)
        if spec.expect.camera:
            image_checks, stats, png = _image_checks(reply.get("render", {}), spec, reference)
            checks += image_checks
        if spec.mesh is not None:
            checks.append(mesh_check(mesh_answer, "the scene geometry was not exported"))
    scored = gated_mean(checks, _component_names(spec), spec.gates)
    lines = scored.lines
    if not checks[0].ok:
        lines.append("(the scene was not inspected or rendered because the script failed)")
    details: dict[str, Any] = {
        "checks": scored.checks,
        "script_output": str(reply.get("phase_a", {}).get("log_tail", ""))[-2000:],
        "timings": {
            "script_s": reply.get("phase_a", {}).get("seconds"),
            "inspect_render_s": reply.get("seconds"),
            "render_s": (reply.get("render") or {}).get("seconds"),
            "worker_s": reply.get("worker_s"),
        },
        "worker": reply.get("worker", {}),
        "attempts": reply.get("attempts", 1),
    }
    if scene is not None:
        details["scene"] = {
            "objects": [
                {k: o[k] for k in ("name", "type", "location", "bbox_min", "bbox_max") if k in o}
                for o in scene.get("objects", [])[:50]
            ],
            "object_count": scene.get("object_count"),
            "lights": scene.get("lights"),
            "world": scene.get("world"),
            "camera": scene.get("camera"),
            "missing_images": scene.get("missing_images"),
        }
    if stats is not None:
        details["image"] = {
            "width": stats.width,
            "height": stats.height,
            "mean_luminance": round(stats.mean_luminance, 5),
            "std_luminance": round(stats.std_luminance, 5),
            "magenta_fraction": round(stats.magenta_fraction, 5),
        }
    if mesh_answer is not None:
        details["mesh"] = mesh_answer
    if png is not None:
        details["png_base64"] = base64.b64encode(png).decode()
    return Result.scored(
        scored.reward, components=scored.components, feedback="\n".join(lines), details=details
    )
