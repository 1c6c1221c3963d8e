"""Turn one engine run into named checks, a reward and feedback (pure; no engine here).

Gates (``spec.gates``, always ``scripts``, ``scene`` and ``frames``) zero the reward when not
fully met; every other check (``node:*``, ``signal:*``, ``probe:*``) is a component in
[0, 1] and the reward is their mean when no gate failed. ``pass`` means every component is 1.

What each structural check trusts (see docs/godot.md, "What is trusted"):

- ``scripts``: the engine's stderr (a parse error is printed when the harness loads a script,
  before any model code runs, and nothing can take a printed line back) and the harness's
  per-file verdict;
- ``scene``: the harness's report A, written before the model's code first runs;
- ``frames``: report B holds token B only when every frame ran; the model's code never
  held token B. Any ``SCRIPT ERROR`` on stderr during the run fails it too.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from typing import Any

from verifiers.gates import CheckOutcome, gated_mean, signal_name
from verifiers.types import Result

from ._engine import ENGINE
from ._spec import (
    AtRestProbe,
    ContactProbe,
    GodotSpec,
    MovedProbe,
    NodeExpect,
    PositionProbe,
    SignalExpect,
)
from ._tscn import NodeState, SceneState

__all__ = ["CheckOutcome", "RunReport", "evaluate", "script_errors"]

_AT = re.compile(r"^\s*At: (res://[^\s:]+):(\d+)")


@dataclass
class RunReport:
    """What the verifier learned from one engine run (host side)."""

    how: str
    """``exit``, ``timeout``, ``oom`` or ``signal``."""
    code: int
    seconds: float
    stderr: str
    report_a: dict[str, Any] | None
    """Report A when it carried token A (else None)."""
    frames_proven: bool
    """Report B carried token B."""
    frames_note: dict[str, Any] = field(default_factory=dict)
    """Report B's untrusted note when it did not (``problem``, ``frames``)."""
    start: SceneState | None = None
    end: SceneState | None = None
    state_error: str = ""
    scripts: list[str] = field(default_factory=list)
    truncated: bool = False
    """The engine's output passed the sandbox's cap: errors after it would be unseen."""
    cpu_s: float = 0.0
    """The engine's CPU seconds (user + system) for this check, where the sandbox says."""
    contacts: list[dict[str, Any]] = field(default_factory=list)
    """Per contact probe, from the proven report B: ``frame`` of the first contact (-1:
    none), ``jump`` (first frame the node moved further than its velocity explains, -1:
    none), ``size`` of that jump, ``rigid`` (the node is a rigid body)."""
    forked: bool = False
    """A forked child of the fork server ran it (else a fresh engine): shown in
    ``details.engine``, so a fork server that silently fell back everywhere is seen."""
    profile: dict[str, float] = field(default_factory=dict)
    """Where a forked check's time went (the driver's clock, ``details.engine.profile``):
    its batch's server start and size, preparing its project, its child, collecting."""


_THREAD_LOST = "Reference to a Thread object was lost while the thread is still running"
"""The engine's warning when a running thread's ``Thread`` object is freed: the harness's
audit sees every ``Thread`` object that lives at a frame, this covers one freed in between."""


def script_errors(stderr: str) -> tuple[list[str], list[str]]:
    """``(parse errors, runtime errors)`` printed by the engine, each with its location."""
    parse: list[str] = []
    runtime: list[str] = []
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if "SCRIPT ERROR:" not in line:
            continue
        text = line.split("SCRIPT ERROR:", 1)[1].strip()
        where = _AT.match(lines[i + 1]) if i + 1 < len(lines) else None
        if where:
            text = f"{where.group(1)}:{where.group(2)}: {text}"
        (parse if "Parse Error" in text else runtime).append(text[:300])
    return parse, runtime


def _ended(run: RunReport, spec: GodotSpec) -> str:
    if run.how == "timeout":
        return f"the engine run took longer than {spec.timeout_s:g}s (an endless loop in _ready/_process?)"
    if run.how == "oom":
        return f"the engine ran out of memory (limit {spec.memory_mb} MB)"
    if run.how == "signal":
        return f"the engine crashed ({signal_name(run.code)}) while running your scene"
    return f"the engine exited with status {run.code}"


def _structural(run: RunReport, spec: GodotSpec) -> list[CheckOutcome]:
    parse, runtime = script_errors(run.stderr)
    out: list[CheckOutcome] = []
    verdicts = (run.report_a or {}).get("parse", {})
    bad = [s for s in run.scripts if verdicts.get(f"res://{s}") is not True]
    shadows = (run.report_a or {}).get("shadows", {})
    if parse or (run.report_a is not None and bad):
        detail = "; ".join(parse[:5]) or "; ".join(
            f"{s} overrides the engine method {shadows[f'res://{s}']} (not allowed: the "
            "harness reads the scene through engine methods)"
            if f"res://{s}" in shadows
            else f"{s} did not compile"
            for s in bad[:5]
        )
        out.append(CheckOutcome("scripts", 0.0, True, f"scripts do not parse: {detail}"))
        return out
    if run.report_a is None:
        out.append(
            CheckOutcome(
                "scripts", 0.0, True, f"{_ended(run, spec)} before the scripts were checked"
            )
        )
        return out
    out.append(CheckOutcome("scripts", 1.0, True))
    scene = run.report_a.get("scene")
    if scene != "ok":
        failed = "could not be loaded" if scene == "load" else "could not be instanced"
        out.append(
            CheckOutcome(
                "scene", 0.0, True, f"scene {spec.scene!r} {failed} (see the engine errors)"
            )
        )
        return out
    out.append(CheckOutcome("scene", 1.0, True))
    clean_exit = run.how == "exit" and run.code == 0
    if not run.frames_proven or not clean_exit:
        note = run.frames_note
        problem = str(note.get("problem", ""))
        why: str | None = {
            "freed": "the scene root was freed",
            "resumed": "the harness was tampered with",
            "start": f"the scene has more than {spec.max_nodes} nodes",
            "end": f"the scene grew past {spec.max_nodes} nodes",
            "audit": f"{str(note.get('why', ''))[:200]} (the harness audits every script and "
            "thread each frame, also those made at run time: it reads the scene through "
            "engine methods)",
        }.get(problem)
        if why is None:
            why = _ended(run, spec) if not clean_exit else "the engine quit"
        message = f"the scene did not run {spec.frames} frames: {why}"
        if isinstance(note.get("frames"), int) and problem:
            message += f" (after {note['frames']} frames)"
        out.append(CheckOutcome("frames", 0.0, True, message))
        return out
    if run.truncated:
        out.append(
            CheckOutcome(
                "frames",
                0.0,
                True,
                "the engine's output passed the output cap, so script errors could not be "
                "checked: print less",
            )
        )
        return out
    if _THREAD_LOST in run.stderr:
        runtime.append("a Thread was freed while it still ran (it could race the harness)")
    if runtime:
        out.append(
            CheckOutcome(
                "frames", 0.0, True, "script errors while running: " + "; ".join(runtime[:5])
            )
        )
        return out
    out.append(CheckOutcome("frames", 1.0, True))
    return out


def _match(pattern: str | None, value: str) -> bool:
    if pattern is None:
        return True
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(value, pattern)
    return value == pattern


def _fmt(v: tuple[float, ...] | list[float]) -> str:
    return "(" + ", ".join(f"{x:.2f}" for x in v) + ")"


def _distance(a: tuple[float, ...], b: list[float]) -> float:
    if len(a) != len(b):
        return math.inf
    d = math.dist(a, b)
    return d if math.isfinite(d) else math.inf


def _near(
    label: str,
    path: str,
    position: tuple[float, ...],
    target: list[float],
    tol: float,
    when: str,
) -> CheckOutcome:
    """``position`` is within ``tol`` of ``target`` (``when``: ``starts`` or ``ends``)."""
    if _distance(position, target) > tol:
        return CheckOutcome(
            label,
            0.0,
            False,
            f"{path} {when} at {_fmt(position)}, expected {_fmt(target)} within {tol:g}",
        )
    return CheckOutcome(label, 1.0)


def _node_check(expect: NodeExpect, index: int, scene: SceneState) -> CheckOutcome:
    label = expect.label(index)
    found = [
        n
        for n in scene.nodes.values()
        if _match(expect.path, n.path)
        and _match(expect.name, n.name)
        and (expect.type is None or n.type == expect.type)
    ]
    what = " ".join(x for x in (expect.path or expect.name or "", expect.type or "") if x) or "any"
    if expect.count is not None and len(found) != expect.count:
        return CheckOutcome(
            label, 0.0, False, f"expected {expect.count} node(s) {what}, found {len(found)}"
        )
    if expect.count is None and len(found) < expect.min_count:
        return CheckOutcome(
            label,
            0.0,
            False,
            f"expected at least {expect.min_count} node(s) {what}, found {len(found)}",
        )
    if expect.position is not None and found:
        node = found[0]
        if node.position is None:
            return CheckOutcome(label, 0.0, False, f"{node.path} ({node.type}) has no position")
        return _near(
            label, node.path, node.position, expect.position, expect.position_tol, "starts"
        )
    return CheckOutcome(label, 1.0)


def _signal_check(expect: SignalExpect, scene: SceneState) -> CheckOutcome:
    for c in scene.connections:
        if (
            c["from"] == expect.source
            and c["signal"] == expect.signal
            and c["to"] == expect.to
            and (expect.method is None or c["method"] == expect.method)
        ):
            return CheckOutcome(expect.label(), 1.0)
    return CheckOutcome(
        expect.label(),
        0.0,
        False,
        f"signal {expect.signal!r} of {expect.source!r} is not connected to {expect.to!r}"
        + (f".{expect.method}" if expect.method else "")
        + " (declare it in the .tscn or connect it with CONNECT_PERSIST)",
    )


def _probe_node(scene: SceneState, path: str) -> NodeState | None:
    return scene.nodes.get(path)


def _contact(probe: ContactProbe, seen: dict[str, Any] | None, frames: int) -> CheckOutcome:
    label = probe.label()
    if seen is None:
        return CheckOutcome(label, 0.0, False, f"{probe.node!r} was not watched")
    frame, jump = int(seen.get("frame", -1)), int(seen.get("jump", -1))
    if frame < 0:
        return CheckOutcome(
            label, 0.0, False, f"{probe.node} never touched {probe.other} in {frames} frames"
        )
    if probe.physics and seen.get("rigid") is not True:
        return CheckOutcome(
            label, 0.0, False, f"{probe.node} is not a rigid body (physics moves rigid bodies)"
        )
    if probe.physics and 0 <= jump <= frame:
        size = float(seen.get("size", 0.0))
        return CheckOutcome(
            label,
            0.0,
            False,
            f"{probe.node} was moved by a script at frame {jump} (a jump of {size:.3f} its "
            f"velocity does not explain) before it touched {probe.other}: let physics move it",
        )
    return CheckOutcome(label, 1.0)


def _probe(probe: Any, start: SceneState, end: SceneState) -> CheckOutcome:
    label = probe.label()
    node = _probe_node(end, probe.node)
    if node is None:
        return CheckOutcome(label, 0.0, False, f"{probe.node!r} does not exist after the frames")
    if node.position is None:
        return CheckOutcome(label, 0.0, False, f"{probe.node!r} ({node.type}) has no position")
    if isinstance(probe, PositionProbe):
        return _near(label, probe.node, node.position, probe.target, probe.tol, "ends")
    if isinstance(probe, AtRestProbe):
        if node.type not in ENGINE.rigid_types:
            return CheckOutcome(
                label, 0.0, False, f"{probe.node} is a {node.type}, not a rigid body"
            )
        velocity = node.props.get("linear_velocity")
        speed = math.hypot(*velocity) if isinstance(velocity, list) else 0.0
        asleep = node.props.get("sleeping") is True
        if not (asleep or speed <= probe.max_speed) or not math.isfinite(speed):
            return CheckOutcome(
                label, 0.0, False, f"{probe.node} is still moving ({speed:.3f} units/s)"
            )
        for bound, sign in ((probe.min, 1.0), (probe.max, -1.0)):
            if bound is None:
                continue
            if len(bound) != len(node.position) or any(
                not math.isfinite(p) or sign * (p - b) < 0
                for p, b in zip(node.position, bound, strict=True)
            ):
                return CheckOutcome(
                    label,
                    0.0,
                    False,
                    f"{probe.node} rests at {_fmt(node.position)}, outside min {_fmt(probe.min or [])} max {_fmt(probe.max or [])}",
                )
        return CheckOutcome(label, 1.0)
    assert isinstance(probe, MovedProbe)
    before = _probe_node(start, probe.node)
    if before is None or before.position is None or len(before.position) != len(node.position):
        return CheckOutcome(label, 0.0, False, f"{probe.node!r} did not exist at the start")
    delta = [b - a for a, b in zip(before.position, node.position, strict=True)]
    if probe.direction is not None:
        norm = math.hypot(*probe.direction)
        if len(probe.direction) != len(delta) or norm == 0:
            return CheckOutcome(
                label, 0.0, False, f"direction {probe.direction} does not fit {probe.node}"
            )
        moved = sum(d * u for d, u in zip(delta, probe.direction, strict=True)) / norm
    else:
        moved = math.hypot(*delta)
    if not math.isfinite(moved) or moved < probe.min_distance:
        return CheckOutcome(
            label,
            0.0,
            False,
            f"{probe.node} moved {moved:.3f}, expected at least {probe.min_distance:g}",
        )
    return CheckOutcome(label, 1.0)


def evaluate(run: RunReport, spec: GodotSpec) -> Result:
    """Checks, reward and feedback for one run."""
    checks = _structural(run, spec)
    if all(c.ok for c in checks) and len(checks) == 3:
        if run.start is None or run.end is None:
            message = f"the saved scene state could not be read: {run.state_error or 'missing'}"
            checks += [CheckOutcome(n, 0.0, False, message) for n in spec.component_names()[3:]]
        else:
            checks += [_node_check(e, i, run.start) for i, e in enumerate(spec.expect.nodes)]
            checks += [_signal_check(s, run.start) for s in spec.expect.signals]
            contacts = iter(run.contacts)
            for p in spec.probes:
                if isinstance(p, ContactProbe):
                    checks.append(_contact(p, next(contacts, None), spec.frames))
                else:
                    checks.append(_probe(p, run.start, run.end))
    scored = gated_mean(checks, spec.component_names(), spec.gates)
    details: dict[str, Any] = {
        "checks": scored.checks,
        "engine": {
            "how": run.how,
            "code": run.code,
            "seconds": round(run.seconds, 3),
            "cpu_s": round(run.cpu_s, 4),
            "forked": run.forked,
            **({"profile": run.profile} if run.profile else {}),
        },
        "stderr_tail": run.stderr[-2000:],
    }
    if run.end is not None:
        details["end_state"] = {
            n.path: {"type": n.type, "position": list(n.position) if n.position else None}
            for n in list(run.end.nodes.values())[:50]
        }
    return Result.scored(
        scored.reward,
        components=scored.components,
        feedback="\n".join(scored.lines),
        details=details,
    )
