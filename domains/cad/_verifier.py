"""``cad.script``: run a model-written CadQuery or build123d script and judge the part it builds.

Two sandbox sessions of the library's runtime (``cadquery`` or ``build123d``: different OCP
builds, so separate runtimes; both zygotes import their library once), like render.blender:

1. **script** (untrusted): ``_worker.py script`` runs the model's ``part.py`` and writes the
   part named by ``spec.result`` as a BREP. Whatever the model's process writes (its own STL,
   STEP, or a forged report) stays in that session: only ``part.brep`` leaves it, and it is
   the model's answer however it was made.
2. **judge** (trusted): a *fresh* session with only the read-only BREP. ``_worker.py judge``
   measures the solid itself (validity, solids, closed shells, volume, bounding box, faces,
   edges, holes, a STEP round trip) and tessellates it; the host scores those measurements
   with ``mesh.constraints``' check functions and runs ``mesh.constraints``' analysis on the
   tessellation (``spec.mesh``).

Every way the script ends (exception, exit, crash of the kernel, timeout, memory) is the
model's ``fail``; so is a part that crashes the judge twice, outlasts it or exhausts its memory.
A runtime that cannot start is ``SandboxUnavailable``; a judge that fails on its own
(``judge_error``, no report) is ``InfraError``: neither is a score.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from verifiers.domains.mesh._reuse import analyze_stl, constraints_table

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError, SandboxUnavailable
from verifiers.gates import process_end, read_left, untrusted_error
from verifiers.protocol import Verifier
from verifiers.registry import register
from verifiers.text import completion_text, last_code_block
from verifiers.types import Result, Trajectory

from ._checks import evaluate
from ._spec import CadSpec

__all__ = ["CadScript"]

_WORKER = Path(__file__).with_name("_worker.py").read_bytes()
_MAX_BREP = 64 << 20
_MAX_STL = 256 << 20
_MAX_REPORT = 4 << 20
_PIDS = 64
_JUDGE_ATTEMPTS = 2
_START_GRACE_S = 30.0
_RUNTIME_BROKEN = (3, 126, 127)


@register("cad.script")
class CadScript(Verifier[CadSpec]):
    """Runs the completion's last fenced Python block as a CAD script; see the module docstring."""

    Spec: ClassVar[type[CadSpec]] = CadSpec
    version: ClassVar[str] = "1"

    def budget_s(self, spec: CadSpec) -> float:
        mesh = spec.mesh_timeout_s if spec.mesh is not None else 0.0
        return spec.timeout_s + _JUDGE_ATTEMPTS * spec.judge_timeout_s + mesh + _START_GRACE_S

    async def verify(self, trajectory: Trajectory, spec: CadSpec, ctx: VerifierContext) -> Result:
        constraints = constraints_table(spec.mesh, "spec.mesh") if spec.mesh is not None else None
        script = last_code_block(completion_text(trajectory), spec.language)
        if script is None or not script.strip():
            return Result.failed(
                f"no ```{spec.language} code block with a {spec.library} script in the completion",
                components=dict.fromkeys(spec.component_names(), 0.0),
            )
        if trajectory.task.reference is not None and constraints is None:
            raise BadInput(
                "task.reference (a reference mesh) needs spec.mesh (use {} for no other "
                "mesh constraints): the similarity checks are part of the mesh component"
            )
        reply = await self._run(script, spec, ctx)
        mesh_answer = None
        if constraints is not None and reply.get("stl"):
            with tempfile.TemporaryDirectory(prefix="verifiers-cad-ref-") as work:
                # mesh.constraints' own resolution of task.reference (path, base64, artifact)
                from verifiers.domains.mesh import MeshConstraints

                reference = MeshConstraints()._reference(trajectory, ctx, Path(work))
                mesh_answer = await analyze_stl(
                    ctx,
                    reply.pop("stl"),
                    constraints=constraints,
                    reference=reference,
                    max_faces=spec.max_mesh_faces,
                    timeout=spec.mesh_timeout_s,
                )
        reply.pop("stl", None)
        return evaluate(reply, spec, mesh_answer)

    def _limits(self, spec: CadSpec, timeout: float) -> dict[str, Any]:
        return {
            "timeout_s": timeout,
            "memory_mb": spec.memory_mb,
            "pids": _PIDS,
            "file_bytes": _MAX_STL,
        }

    async def _run(self, script: str, spec: CadSpec, ctx: VerifierContext) -> dict[str, Any]:
        runtime = spec.library
        job = {
            "result": spec.result,
            "max_faces": spec.max_faces,
            "deflection": spec.deflection,
        }
        reply: dict[str, Any] = {"attempts": 0}
        async with ctx.sandbox(runtime, **self._limits(spec, spec.timeout_s)) as sb:
            await sb.write_files({"part.py": script})
            await sb.write_files(
                {"_worker.py": _WORKER, "job.json": json.dumps(job).encode()}, readonly=True
            )
            run = await sb.exec(["python", "_worker.py", "script"], timeout=spec.timeout_s)
            phase = _outcome(run)
            brep: bytes | None = None
            if phase["how"] == "exit" and phase["code"] == 0:
                phase["report"] = _untrusted(await read_left(sb, "phase_a.json", _MAX_REPORT))
                if phase["report"].get("ok"):
                    brep = await read_left(sb, "part.brep", _MAX_BREP)
            phase["log_tail"] = (run.text("stdout") + run.text("stderr"))[-2000:]
        reply["phase_a"] = phase
        if phase["how"] == "exit" and phase["code"] in _RUNTIME_BROKEN:
            await _probe_runtime(ctx, runtime)
        reply["brep"] = brep is not None
        if brep is None:
            return reply
        for attempt in range(1, _JUDGE_ATTEMPTS + 1):
            reply["attempts"] = attempt
            verdict = await self._judge(brep, job, spec, ctx)
            if verdict is not None:
                reply.update(verdict)
                return reply
        reply["judge"] = {
            "failure": f"the part crashed the CAD kernel {_JUDGE_ATTEMPTS} times during inspection"
        }
        return reply

    async def _judge(
        self, brep: bytes, job: dict[str, Any], spec: CadSpec, ctx: VerifierContext
    ) -> dict[str, Any] | None:
        """One trusted inspection in a fresh session; None when the kernel crashed (retry)."""
        limits = self._limits(spec, spec.judge_timeout_s)
        async with ctx.sandbox(spec.library, **limits) as sb:
            await sb.write_files(
                {"_worker.py": _WORKER, "job.json": json.dumps(job).encode(), "part.brep": brep},
                readonly=True,
            )
            run = await sb.exec(["python", "_worker.py", "judge"], timeout=spec.judge_timeout_s)
            if run.timed_out:
                return {
                    "judge": {
                        "failure": f"inspecting the part took longer than {spec.judge_timeout_s:g}s (too complex)"
                    }
                }
            if run.oom_killed:
                return {
                    "judge": {
                        "failure": f"inspecting the part ran out of memory ({spec.memory_mb} MB)"
                    }
                }
            if run.returncode < 0:
                return None
            if run.returncode in _RUNTIME_BROKEN:
                await _probe_runtime(ctx, spec.library)
            raw = await read_left(sb, "report.json", _MAX_REPORT)
            try:
                report = json.loads(raw) if raw is not None else None
            except ValueError:
                report = None
            if not isinstance(report, dict) or report.get("judge_error"):
                tail = " | ".join(run.text("stderr").strip().splitlines()[-3:])
                why = report.get("judge_error") if isinstance(report, dict) else tail
                raise InfraError(f"cad judge failed (exit {run.returncode}): {why}")
            out: dict[str, Any] = {"judge": report}
            if report.get("stl"):
                out["stl"] = await read_left(sb, "part.stl", _MAX_STL)
        return out


def _untrusted(data: bytes | None) -> dict[str, Any]:
    """The script phase's report rebuilt field by field (known keys and types only)."""
    try:
        raw = json.loads(data.decode("utf-8", "replace")) if data is not None else None
    except (ValueError, RecursionError):
        raw = None
    if not isinstance(raw, dict):
        return {}
    report: dict[str, Any] = {"ok": raw.get("ok") is True}
    error = untrusted_error(raw.get("error"))
    if error is not None:
        report["error"] = error
        report["ok"] = False
    return report


def _outcome(run: Any) -> dict[str, Any]:
    how, code = process_end(run)
    return {"how": how, "code": code, "seconds": run.duration_s}


async def _probe_runtime(ctx: VerifierContext, runtime: str) -> None:
    """Import OCP in a session of our own: a runtime that cannot is ``SandboxUnavailable``.

    Raises:
        SandboxUnavailable: the runtime cannot import its CAD library.
    """
    async with ctx.sandbox(runtime, timeout_s=120, memory_mb=2048) as sb:
        run = await sb.exec(["python", "-c", f"import {runtime}, OCP"], timeout=120)
    if not run.ok:
        tail = " | ".join(run.text("stderr").strip().splitlines()[-3:])
        raise SandboxUnavailable(
            f"the {runtime} runtime cannot import {runtime}: {tail or run.returncode}",
            hint=f"run `verifiers sandbox build {runtime}` (and .ci/setup.d/50-engines.sh)",
        )
