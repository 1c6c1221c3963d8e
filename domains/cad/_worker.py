"""The cad.script program inside the sandbox: runs in the ``cadquery`` or ``build123d``
runtime, never on the host. Only stdlib and OCP (both runtimes have it) are used here, so one
program serves both libraries. Two modes, in two *separate* sessions:

* ``python _worker.py script`` (**untrusted**): runs the model's ``part.py`` from a real file
  (tracebacks name the model's lines), takes the variable the spec names (``result``),
  turns it into one OCP shape (a CadQuery ``Workplane``/``Shape``, a build123d ``Part``/
  ``BuildPart``/``Shape``, a list of those, or a ``TopoDS_Shape``) and writes it as a BREP
  file. The model's code runs in this very process, so nothing written here is trusted: the
  BREP is the model's answer, whatever wrote it, and ``phase_a.json`` is only feedback.
* ``python _worker.py judge`` (**trusted**): in a *fresh* session (nothing of the script's
  process or files alive), reads the read-only ``part.brep`` and computes everything from the
  solid itself: B-rep validity (``BRepCheck_Analyzer``), solids and closed shells, exact
  volume, tight bounding box, unique face/edge counts, holes (concave cylindrical faces,
  grouped by axis and radius), a STEP export that must read back to the same solids, and an
  STL tessellation for ``mesh.constraints``. A file the script left (a forged STL, STEP or
  report) is never read: the judge's session holds only the BREP.

Exit status 3 means OCP does not import (a broken runtime, probed by the host).
"""

from __future__ import annotations

import json
import math
import runpy
import sys
import time
import traceback
from typing import Any

SCRIPT = "part.py"
BREP = "part.brep"
PHASE_A = "phase_a.json"
JOB = "job.json"
REPORT = "report.json"
STEP = "part.step"
STL = "part.stl"
RUNTIME_BROKEN = 3


def _write(name: str, data: dict[str, Any]) -> None:
    with open(name, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


# -- script (untrusted) -------------------------------------------------------------------------


def _to_shape(obj: Any) -> Any:
    """One ``TopoDS_Shape`` from what a CadQuery or build123d script leaves."""
    from OCP.BRep import BRep_Builder
    from OCP.TopoDS import TopoDS_Compound, TopoDS_Shape

    if isinstance(obj, TopoDS_Shape):
        return obj
    part = getattr(obj, "part", None)  # build123d.BuildPart
    if part is not None and isinstance(getattr(part, "wrapped", None), TopoDS_Shape):
        return part.wrapped
    wrapped = getattr(obj, "wrapped", None)  # cadquery.Shape, build123d.Shape
    if isinstance(wrapped, TopoDS_Shape):
        return wrapped
    vals = getattr(obj, "vals", None)  # cadquery.Workplane: the objects on its stack
    if callable(vals):
        obj = [v for v in vals() if isinstance(getattr(v, "wrapped", None), TopoDS_Shape)]
        if not obj:
            raise ValueError("the Workplane holds no shape (nothing was built?)")
    if isinstance(obj, list | tuple) and obj:
        compound = TopoDS_Compound()
        builder = BRep_Builder()
        builder.MakeCompound(compound)
        for item in obj:
            builder.Add(compound, _to_shape(item))
        return compound
    raise TypeError(
        f"`result` is a {type(obj).__name__}; assign a CadQuery Workplane/Shape or a "
        "build123d Part/BuildPart/Shape to it"
    )


def run_script(result_name: str) -> int:
    report: dict[str, Any] = {"ok": False}
    try:
        namespace = runpy.run_path(SCRIPT, run_name="__main__")
        if result_name not in namespace:
            raise NameError(f"the script defines no variable `{result_name}` holding the part")
        shape = _to_shape(namespace[result_name])
        if shape.IsNull():
            raise ValueError(f"`{result_name}` is an empty shape")
        from OCP.BRepTools import BRepTools

        if not BRepTools.Write_s(shape, BREP):
            raise OSError("the part could not be written as BREP")
        report["ok"] = True
    except (Exception, SystemExit) as exc:
        # The model's script failed to build a part, ``sys.exit()`` included: report where.
        # (A KeyboardInterrupt or a signal ends the process instead: the host scores that
        # exit/signal as the model's fail, see _verifier._outcome.)
        frames = [
            {"line": f.lineno, "func": f.name, "text": (f.line or "")[:300]}
            for f in traceback.extract_tb(exc.__traceback__)
            if f.filename.endswith(SCRIPT)
        ][-5:]
        report["error"] = {"type": type(exc).__name__, "message": str(exc)[:1000], "frames": frames}
    _write(PHASE_A, report)
    return 0


# -- judge (trusted) -----------------------------------------------------------------------------


def _count(shape: Any, kind: Any) -> int:
    """Distinct sub-shapes of ``kind`` (an edge shared by two faces counts once): buckets by
    the shape's hash (its TShape and location), ``IsSame`` within a bucket."""
    buckets: dict[int, list[Any]] = {}
    count = 0
    for item in _subshapes(shape, kind):
        bucket = buckets.setdefault(hash(item), [])
        if not any(item.IsSame(other) for other in bucket):
            bucket.append(item)
            count += 1
    return count


def _subshapes(shape: Any, kind: Any) -> list[Any]:
    from OCP.TopExp import TopExp_Explorer

    out = []
    explorer = TopExp_Explorer(shape, kind)
    while explorer.More():
        out.append(explorer.Current())
        explorer.Next()
    return out


def _holes(shape: Any, faces: list[Any], limit: int) -> list[dict[str, Any]]:
    """Concave cylindrical faces (the surface normal points at the axis), grouped by axis
    line and radius: a drilled hole split at its seam is still one hole."""
    from OCP.BRepAdaptor import BRepAdaptor_Surface
    from OCP.BRepGProp import BRepGProp_Face
    from OCP.GeomAbs import GeomAbs_Cylinder
    from OCP.gp import gp_Pnt, gp_Vec
    from OCP.TopoDS import TopoDS

    as_face = getattr(TopoDS, "Face_s", None) or TopoDS.Face  # OCP 7.9: Face_s; 8.0: Face
    groups: dict[tuple[float, ...], dict[str, Any]] = {}
    for face in faces[:limit]:
        f = as_face(face)
        surface = BRepAdaptor_Surface(f)
        if surface.GetType() != GeomAbs_Cylinder:
            continue
        cylinder = surface.Cylinder()
        radius = cylinder.Radius()
        axis = cylinder.Axis()
        u = 0.5 * (surface.FirstUParameter() + surface.LastUParameter())
        v = 0.5 * (surface.FirstVParameter() + surface.LastVParameter())
        point, normal = gp_Pnt(), gp_Vec()
        BRepGProp_Face(f).Normal(u, v, point, normal)
        loc, d = axis.Location(), axis.Direction()
        rel = gp_Vec(loc, point)
        along = rel.Dot(gp_Vec(d))
        radial = rel.Subtracted(gp_Vec(d).Multiplied(along))
        if normal.Dot(radial) >= 0:
            continue  # convex: a boss or a fillet, not a hole
        dx, dy, dz = d.X(), d.Y(), d.Z()
        if (dx, dy, dz) < (0, 0, 0):
            dx, dy, dz = -dx, -dy, -dz
        # the axis line's point closest to the origin identifies the line
        t = loc.X() * dx + loc.Y() * dy + loc.Z() * dz
        px, py, pz = loc.X() - t * dx, loc.Y() - t * dy, loc.Z() - t * dz
        key = tuple(round(x, 4) for x in (dx, dy, dz, px, py, pz, radius))
        entry = groups.setdefault(
            key,
            {"diameter": 2 * radius, "axis": [dx, dy, dz], "through": [px, py, pz], "faces": 0},
        )
        entry["faces"] += 1
    return list(groups.values())


MAX_OVERLAP_PAIRS = 200
"""Solid pairs whose boxes meet that the judge intersects at most (one boolean each)."""


def _overlap(solids: list[Any], volumes: list[float]) -> tuple[float, int]:
    """``(volume shared by solids, pairs left unchecked)``.

    Volume is summed per solid, so two copies of one box in the same place measured as two
    boxes' volume (a "two blocks" task passed with one block's material). Each pair whose
    bounding boxes meet is intersected (``BRepAlgoAPI_Common``); touching faces share no
    volume. Past :data:`MAX_OVERLAP_PAIRS` the rest is reported, not computed.
    """
    from OCP.Bnd import Bnd_Box
    from OCP.BRepAlgoAPI import BRepAlgoAPI_Common
    from OCP.BRepBndLib import BRepBndLib
    from OCP.BRepGProp import BRepGProp
    from OCP.GProp import GProp_GProps

    boxes = []
    for solid in solids:
        box = Bnd_Box()
        BRepBndLib.Add_s(solid, box)
        boxes.append(box)
    shared, left, done = 0.0, 0, 0
    for i in range(len(solids)):
        for j in range(i + 1, len(solids)):
            if boxes[i].IsOut(boxes[j]):
                continue
            if done >= MAX_OVERLAP_PAIRS:
                left += 1
                continue
            done += 1
            common = BRepAlgoAPI_Common(solids[i], solids[j])
            if not common.IsDone():
                left += 1
                continue
            props = GProp_GProps()
            BRepGProp.VolumeProperties_s(common.Shape(), props)
            if props.Mass() > 1e-6 * min(volumes[i], volumes[j]):
                shared += props.Mass()
    return shared, left


def judge(job: dict[str, Any]) -> dict[str, Any]:
    from OCP.Bnd import Bnd_Box
    from OCP.BRep import BRep_Builder, BRep_Tool
    from OCP.BRepBndLib import BRepBndLib
    from OCP.BRepCheck import BRepCheck_Analyzer
    from OCP.BRepGProp import BRepGProp
    from OCP.BRepMesh import BRepMesh_IncrementalMesh
    from OCP.BRepTools import BRepTools
    from OCP.GProp import GProp_GProps
    from OCP.IFSelect import IFSelect_RetDone
    from OCP.STEPControl import STEPControl_AsIs, STEPControl_Reader, STEPControl_Writer
    from OCP.StlAPI import StlAPI_Writer
    from OCP.TopAbs import TopAbs_EDGE, TopAbs_FACE, TopAbs_SHELL, TopAbs_SOLID
    from OCP.TopoDS import TopoDS_Shape

    out: dict[str, Any] = {"read": False}
    shape = TopoDS_Shape()
    if not BRepTools.Read_s(shape, BREP, BRep_Builder()) or shape.IsNull():
        out["read_error"] = "the part is not a readable B-rep"
        return out
    out["read"] = True
    solids = _subshapes(shape, TopAbs_SOLID)
    faces = _subshapes(shape, TopAbs_FACE)
    out["solids"] = len(solids)
    out["faces"] = _count(shape, TopAbs_FACE)
    out["edges"] = _count(shape, TopAbs_EDGE)
    if out["faces"] > int(job["max_faces"]):
        out["too_complex"] = f"the part has {out['faces']} faces (at most {job['max_faces']})"
        return out
    out["valid"] = bool(BRepCheck_Analyzer(shape).IsValid())
    shells = [s for solid in solids for s in _subshapes(solid, TopAbs_SHELL)]
    out["shells"] = len(shells)
    out["open_shells"] = sum(1 for s in shells if not BRep_Tool.IsClosed_s(s))
    volumes = []
    for solid in solids:
        props = GProp_GProps()
        BRepGProp.VolumeProperties_s(solid, props)
        volumes.append(props.Mass())
    out["volume"] = sum(volumes)
    out["min_solid_volume"] = min(volumes) if volumes else None
    if len(solids) > 1 and min(volumes) > 0:
        out["overlap_volume"], out["overlap_unchecked"] = _overlap(solids, volumes)
    box = Bnd_Box()
    BRepBndLib.AddOptimal_s(shape, box, False, False)
    if box.IsVoid():
        out["bbox"] = None
    else:
        lo, hi = box.CornerMin(), box.CornerMax()  # Get() differs between OCP 7.9 and 8.0
        out["bbox"] = [[lo.X(), lo.Y(), lo.Z()], [hi.X(), hi.Y(), hi.Z()]]
    out["holes"] = _holes(shape, faces, int(job["max_faces"]))
    # STEP must round-trip to the same number of solids
    writer = STEPControl_Writer()
    writer.Transfer(shape, STEPControl_AsIs)
    step_ok = writer.Write(STEP) == IFSelect_RetDone
    if step_ok:
        reader = STEPControl_Reader()
        step_ok = reader.ReadFile(STEP) == IFSelect_RetDone
        if step_ok:
            reader.TransferRoots()
            back = reader.OneShape()
            step_ok = len(_subshapes(back, TopAbs_SOLID)) == len(solids)
    out["step"] = step_ok
    if out["bbox"] is not None:
        lo, hi = out["bbox"]
        diag = math.dist(lo, hi)
        if math.isfinite(diag) and diag > 0:
            BRepMesh_IncrementalMesh(
                shape, max(diag * float(job["deflection"]), 1e-6), False, 0.3, True
            )
            stl = StlAPI_Writer()
            stl.ASCIIMode = False
            out["stl"] = bool(stl.Write(shape, STL))
    return out


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        import OCP  # noqa: F401
    except ImportError:
        return RUNTIME_BROKEN
    if mode == "script":
        with open(JOB, encoding="utf-8") as handle:
            job = json.load(handle)
        return run_script(str(job["result"]))
    if mode == "judge":
        with open(JOB, encoding="utf-8") as handle:
            job = json.load(handle)
        started = time.monotonic()
        from OCP.Standard import Standard_Failure

        try:
            report = judge(job)
        except Standard_Failure as exc:  # the kernel gave up on this shape: the model's part
            report = {"read": True, "kernel_error": f"{type(exc).__name__}: {exc}"[:500]}
        except Exception as exc:
            report = {"judge_error": f"{type(exc).__name__}: {exc}"[:500]}
        report["seconds"] = time.monotonic() - started
        _write(REPORT, report)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
