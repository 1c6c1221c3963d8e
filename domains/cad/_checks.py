"""Turn the script's outcome and the judge's measurements into named checks, a reward and
feedback (pure, host side).

The measured-value checks are ``mesh.constraints``' own (``check_count``, ``check_scalar``,
``check_bbox``: the same tolerance rules and messages), applied to exact B-rep measurements;
the ``mesh`` component is ``mesh.constraints``' analysis of the judge's tessellation. Gates
(``script``, ``valid`` and whatever ``spec.gates`` adds) zero the reward; otherwise the
reward is the mean of the other components; ``pass`` means every component is 1.
"""

from __future__ import annotations

from typing import Any

from verifiers.domains.mesh._analyze import check_bbox, check_count, check_scalar
from verifiers.domains.mesh._reuse import mesh_check

from verifiers.gates import CheckOutcome, gated_mean, signal_name
from verifiers.types import Result

from ._spec import CadSpec, HoleExpect

__all__ = ["CheckOutcome", "evaluate"]


def _ended(outcome: dict[str, Any], what: str, limit: float, memory_mb: int) -> str | None:
    how = outcome.get("how")
    if how == "timeout":
        return f"{what} took longer than {limit:g}s"
    if how == "oom":
        return f"{what} ran out of memory (limit {memory_mb} MB)"
    if how == "signal":
        return f"{what} crashed the CAD kernel ({signal_name(int(outcome.get('code') or 0))})"
    if how == "exit" and outcome.get("code"):
        return (
            f"{what} ended the process (exit status {outcome.get('code')}): do not exit or kill it"
        )
    return None


def _script(reply: dict[str, Any], spec: CadSpec) -> CheckOutcome:
    phase = reply.get("phase_a", {})
    ended = _ended(phase, "the script", spec.timeout_s, spec.memory_mb)
    if ended:
        return CheckOutcome("script", 0.0, True, ended)
    report = phase.get("report") or {}
    error = report.get("error")
    if error:
        lines = ["the script raised an exception:"]
        for frame in error.get("frames", []):
            lines.append(f"  line {frame.get('line')}, in {frame.get('func')}: {frame.get('text')}")
        lines.append(f"{error.get('type')}: {error.get('message')}")
        return CheckOutcome("script", 0.0, True, "\n".join(lines))
    if not report.get("ok"):
        return CheckOutcome("script", 0.0, True, "the script left no part (assign it to `result`)")
    if not reply.get("brep"):
        return CheckOutcome(
            "script", 0.0, True, "the part's B-rep is missing or larger than 64 MB (simplify it)"
        )
    return CheckOutcome("script", 1.0, True)


def _valid(judge: dict[str, Any], spec: CadSpec) -> CheckOutcome:
    if judge.get("failure"):
        return CheckOutcome("valid", 0.0, True, str(judge["failure"]))
    if not judge.get("read"):
        return CheckOutcome(
            "valid", 0.0, True, str(judge.get("read_error", "the part is unreadable"))
        )
    for key in ("kernel_error", "too_complex"):
        if judge.get(key):
            return CheckOutcome(
                "valid", 0.0, True, f"the part could not be inspected: {judge[key]}"
            )
    problems = []
    solids = int(judge.get("solids") or 0)
    if solids == 0:
        problems.append("the part has no solid (faces or wires only?)")
    elif spec.solids is not None and solids != spec.solids:
        problems.append(f"the part has {solids} solids, expected {spec.solids}")
    if not judge.get("valid"):
        problems.append(
            "the B-rep is not valid (BRepCheck_Analyzer: self-intersection, bad edges...)"
        )
    if judge.get("open_shells"):
        problems.append(f"{judge['open_shells']} shell(s) are not closed")
    smallest = judge.get("min_solid_volume")
    if isinstance(smallest, float) and smallest <= 0:
        problems.append("a solid has zero or negative volume (inside out?)")
    shared = judge.get("overlap_volume")
    if isinstance(shared, float) and shared > 0:
        # Volumes add per solid: overlapping solids would count shared material twice.
        problems.append(
            f"solids overlap ({shared:.4g} mm³ shared): fuse them into one solid or move them apart"
        )
    if judge.get("overlap_unchecked"):
        problems.append(
            f"{judge['overlap_unchecked']} pairs of solids with meeting bounding boxes could "
            "not be checked for overlap: fuse the part or separate its solids"
        )
    if problems:
        return CheckOutcome("valid", 0.0, True, "; ".join(problems))
    return CheckOutcome("valid", 1.0, True)


def _from_mesh(name: str, check: dict[str, Any]) -> CheckOutcome:
    return CheckOutcome(
        name,
        1.0 if check["passed"] else 0.0,
        False,
        "" if check["passed"] else str(check["message"]),
    )


def _hole(expect: HoleExpect, holes: list[dict[str, Any]]) -> CheckOutcome:
    found = [h for h in holes if abs(float(h["diameter"]) - expect.diameter) <= expect.tol]
    seen = ", ".join(f"{float(h['diameter']):.3g}" for h in holes[:10]) or "none"
    if expect.count is not None and len(found) != expect.count:
        return CheckOutcome(
            expect.label(),
            0.0,
            False,
            f"expected {expect.count} hole(s) of diameter {expect.diameter:g}±{expect.tol:g}, found {len(found)} (hole diameters: {seen})",
        )
    if expect.count is None and len(found) < expect.min_count:
        return CheckOutcome(
            expect.label(),
            0.0,
            False,
            f"expected at least {expect.min_count} hole(s) of diameter {expect.diameter:g}±{expect.tol:g}, found {len(found)} (hole diameters: {seen})",
        )
    return CheckOutcome(expect.label(), 1.0)


def evaluate(reply: dict[str, Any], spec: CadSpec, mesh_answer: dict[str, Any] | None) -> Result:
    checks = [_script(reply, spec)]
    judge = reply.get("judge") or {}
    if checks[0].ok:
        checks.append(_valid(judge, spec))
    if len(checks) == 2 and checks[1].ok:
        expect = spec.expect
        if expect.faces is not None:
            target = expect.faces if isinstance(expect.faces, int) else expect.faces.model_dump()
            checks.append(
                _from_mesh("faces", check_count("faces", judge.get("faces"), target, "faces"))
            )
        if expect.edges is not None:
            target = expect.edges if isinstance(expect.edges, int) else expect.edges.model_dump()
            checks.append(
                _from_mesh("edges", check_count("edges", judge.get("edges"), target, "edges"))
            )
        if expect.volume is not None:
            checks.append(
                _from_mesh(
                    "volume",
                    check_scalar("volume", judge.get("volume"), expect.volume.model_dump(), ""),
                )
            )
        if expect.bbox is not None:
            import numpy as np

            bounds = judge.get("bbox")
            if bounds is None:
                checks.append(CheckOutcome("bbox", 0.0, False, "the part has no bounding box"))
            else:
                checks.append(_from_mesh("bbox", check_bbox(np, bounds, expect.bbox.model_dump())))
        holes = [h for h in judge.get("holes", []) if isinstance(h, dict)]
        checks += [_hole(h, holes) for h in expect.holes]
        checks.append(
            CheckOutcome(
                "step",
                1.0 if judge.get("step") else 0.0,
                False,
                ""
                if judge.get("step")
                else "the part does not survive a STEP export and re-import",
            )
        )
        if spec.mesh is not None:
            checks.append(mesh_check(mesh_answer, "the part could not be tessellated"))
    scored = gated_mean(checks, spec.component_names(), spec.gates)
    details: dict[str, Any] = {
        "checks": scored.checks,
        "library": spec.library,
        "measured": {
            k: judge.get(k)
            for k in (
                "solids",
                "faces",
                "edges",
                "volume",
                "bbox",
                "holes",
                "valid",
                "open_shells",
                "step",
            )
        },
        "timings": {
            "script_s": reply.get("phase_a", {}).get("seconds"),
            "judge_s": judge.get("seconds"),
        },
        "attempts": reply.get("attempts", 0),
    }
    if mesh_answer is not None:
        details["mesh"] = mesh_answer
    return Result.scored(
        scored.reward,
        components=scored.components,
        feedback="\n".join(scored.lines),
        details=details,
    )
