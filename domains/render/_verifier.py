"""``render.blender``: run a model-written bpy script in the ``blender`` sandbox runtime and judge it.

Render runs on the shared isolation stack: ``ctx.sandbox("blender")``, like every other domain
that runs model code, so ``--sandbox`` (docker, local, none), the runner's hardening, limits,
reaping and recycling all apply here too. The ``blender`` runtime's zygote has ``bpy``
imported and Cycles warmed up (``sandbox/images/blender/preload.py``): each phase below is a
fork of a warm Blender.

A job is two sandbox sessions (see ``_worker.py``):

1. **script** (untrusted): the model's script runs, the scene is saved. Its report is the
   model's own and is read defensively, for feedback only.
2. **judge** (trusted): a *fresh* session, so nothing of the script survives into it (no
   process, no file but the read-only saved scene, no signal path): the scene is opened with
   scripts disabled, inspected and rendered, under the same memory bound.

Every way the script can end (exception, exit, crash, timeout, memory) is the script's
``fail``; so is a scene that crashes, exhausts or outlasts the judge (retried once on a fresh
fork first). Only a sandbox that cannot start (``SandboxUnavailable``) or a judge fault is an
``error``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import marshal
from pathlib import Path
from typing import Any, ClassVar

from verifiers.domains.mesh._reuse import analyze_stl, constraints_table

from verifiers import settings
from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError, SandboxUnavailable
from verifiers.gates import process_end, text_capped, untrusted_error
from verifiers.protocol import Verifier
from verifiers.registry import register
from verifiers.text import completion_text, last_code_block
from verifiers.types import Result, Trajectory

from ._checks import evaluate, no_script_result
from ._image import decode_png
from ._spec import RenderSpec

__all__ = ["BlenderRender", "RUNTIME"]

RUNTIME = "blender"
"""The sandbox runtime render jobs run in (``sandbox/images/blender``)."""
_WORKER_SOURCE = Path(__file__).with_name("_worker.py").read_bytes()
_WORKER_FILES: dict[str, bytes | str] = {
    "_worker.py": _WORKER_SOURCE,
    # The worker compiled once here: compiling its source cost every job ~8 ms of CPU (two
    # jobs per scene). A .pyc header (magic, 12 bytes) and the marshalled code: the job's
    # loader uses it only when the magic is its own interpreter's, else compiles the source.
    "_worker.pyc": importlib.util.MAGIC_NUMBER
    + bytes(12)
    + marshal.dumps(compile(_WORKER_SOURCE, "_worker.py", "exec")),
}
_WORKER_LOADER = (
    "import importlib.util, marshal, sys\n"
    "with open('_worker.pyc', 'rb') as fh:\n"
    "    data = fh.read()\n"
    "if data[:4] == importlib.util.MAGIC_NUMBER:\n"
    "    code = marshal.loads(memoryview(data)[16:])\n"
    "else:\n"
    "    with open('_worker.py', 'rb') as fh:\n"
    "        code = compile(fh.read(), '_worker.py', 'exec')\n"
    "sys.argv = ['_worker.py', *sys.argv[1:]]\n"
    "exec(code, globals())\n"
)
"""``python -c`` program that runs ``_worker.py`` from its precompiled code. Both files are
the host's own, written read-only into the session before anything of the model's runs (in
the script phase the model's code runs later, in the judge phase never), so the code it
loads is trusted."""
_PIDS = 128
"""Processes and threads of one job (Blender's task pools start a few)."""
_MAX_BLEND = 128 << 20
"""Largest saved scene carried to the judge; a bigger one fails the ``script`` gate."""
_MAX_REPORT = 1 << 20
_MAX_JUDGE_FILE = 64 << 20
"""Largest report or PNG read back from the judge."""
_JUDGE_ATTEMPTS = 2
_START_GRACE_S = 30.0
"""Starting a blender runner (container or bubblewrap, import bpy, a warm-up render)."""
_RUNTIME_BROKEN = (3, 126, 127)
"""Exit statuses that may mean a broken runtime rather than the script: ``_worker.py``'s
``RUNTIME_BROKEN`` (bpy does not import) and the runner's "cannot run the interpreter". The
script can exit with them too, so they trigger a probe, never an abstain by themselves."""


@register("render.blender")
class BlenderRender(Verifier[RenderSpec]):
    """Runs the completion's last fenced Python block as a Blender scene script.

    See the module docstring for the two phases. ``VERIFIERS_RENDER_OUTPUT_DIR``: also write
    each PNG there and put its path in ``details``.
    """

    Spec: ClassVar[type[RenderSpec]] = RenderSpec
    version: ClassVar[str] = "2"

    def budget_s(self, spec: RenderSpec) -> float:
        """What a scene is promised: its script's ``timeout_s``, every judge attempt's
        ``render_timeout_s``, the mesh analysis, and a runner's start (import bpy, warm-up),
        so the engine judges a slow scene (a fail) instead of cutting it off (an error)."""
        mesh = spec.mesh.timeout_s if spec.mesh is not None else 0.0
        return spec.timeout_s + _JUDGE_ATTEMPTS * spec.render_timeout_s + mesh + _START_GRACE_S

    async def verify(
        self, trajectory: Trajectory, spec: RenderSpec, ctx: VerifierContext
    ) -> Result:
        script = last_code_block(completion_text(trajectory), spec.language)
        if script is None or not script.strip():
            return no_script_result(
                spec, f"no ```{spec.language} code block with a bpy script in the completion"
            )
        reference = None
        if spec.reference_image is not None:
            path = ctx.resolve_path(spec.reference_image.path)
            try:
                reference = decode_png(path.read_bytes())
            except ValueError as exc:
                raise BadInput(f"reference image {spec.reference_image.path!r}: {exc}") from None
        constraints: dict[str, Any] | None = None
        if spec.mesh is not None:
            constraints = constraints_table(spec.mesh.constraints, "spec.mesh.constraints")
        reply = await self._run(script, spec, ctx)
        mesh_answer = None
        if constraints is not None:
            mesh_answer = await _analyze_mesh(reply, spec, constraints, ctx)
        result = evaluate(reply, spec, reference, mesh_answer)
        out_dir = settings.env("VERIFIERS_RENDER_OUTPUT_DIR")
        png = result.details.get("png_base64")
        if out_dir and isinstance(png, str):
            data = base64.b64decode(png)
            stem = str(trajectory.id) if trajectory.id else hashlib.sha256(data).hexdigest()[:16]
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)
            target = Path(out_dir) / f"{safe}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            result.details["png_path"] = str(target)
        return result

    # -- the two phases ----------------------------------------------------------------

    def _limits(self, spec: RenderSpec) -> dict[str, Any]:
        file_bytes = _MAX_BLEND
        if spec.mesh is not None:
            file_bytes = max(file_bytes, 50 * spec.mesh.max_faces + 4096)
        return {
            "timeout_s": max(spec.timeout_s, spec.render_timeout_s),
            # Beyond Blender's own: the runtime's zygote already maps bpy (~1.4 GB of address
            # space) and the sandbox counts job memory above it (docker: its cgroup is sized
            # for the zygote by the runtime's overhead_mb).
            "memory_mb": spec.memory_mb,
            "pids": _PIDS,
            "file_bytes": file_bytes,
        }

    async def _run(self, script: str, spec: RenderSpec, ctx: VerifierContext) -> dict[str, Any]:
        """Both phases; the reply ``_checks.evaluate`` reads.

        Raises:
            SandboxUnavailable: the ``blender`` runtime cannot start (not built, no bpy).
            InfraError: the judge itself failed.
        """
        limits = self._limits(spec)
        async with ctx.sandbox(RUNTIME, **limits) as sb:
            await sb.write_files(_WORKER_FILES, readonly=True)
            await sb.write_files({"scene.py": script})
            # Read back in the exec's own frame (one round trip per session): the report and
            # the scene, whether or not the job leaves them (what is used is decided below).
            sb.prefetch("phase_a.json", max_bytes=_MAX_REPORT)
            sb.prefetch("scene.blend", max_bytes=_MAX_BLEND)
            run = await sb.exec(["python", "-c", _WORKER_LOADER, "script"], timeout=spec.timeout_s)
            phase_a = _process_outcome(run)
            phase_a["log_tail"] = (run.text("stdout") + run.text("stderr"))[-4000:]
            blend: bytes | None = None
            if phase_a["how"] == "exit" and phase_a["code"] == 0:
                try:
                    raw = await _read_optional(sb, "phase_a.json", _MAX_REPORT)
                except _TooLarge:
                    raw = None  # not a report the harness writes: the script's doing
                report = _untrusted_report(raw)
                if report.get("ok") and report.get("saved"):
                    try:
                        blend = await _read_optional(sb, "scene.blend", _MAX_BLEND)
                    except _TooLarge:
                        report.update(saved=False, save_error="scene.blend is over 128 MB")
                    if blend is None and report.get("saved"):
                        report.update(saved=False, save_error="scene.blend was not written")
                phase_a["report"] = report
        if phase_a["how"] == "exit" and phase_a["code"] in _RUNTIME_BROKEN:
            # After the session: its runner is back in the pool (one slot may be all there is).
            await _probe_runtime(ctx, limits)  # raises when bpy really cannot import
        reply: dict[str, Any] = {"phase_a": phase_a, "attempts": 1}
        if blend is None:
            return reply
        job = {
            "render": {
                "resolution": list(spec.resolution),
                "samples": spec.samples,
                "denoise": spec.denoise,
                "threads": spec.threads,
                "exr_check": spec.exr_check,
            },
            "mesh_export": (
                {"objects": spec.mesh.objects, "max_faces": spec.mesh.max_faces}
                if spec.mesh is not None
                else None
            ),
        }
        for attempt in range(1, _JUDGE_ATTEMPTS + 1):
            reply["attempts"] = attempt
            verdict = await self._judge(blend, job, spec, ctx, limits)
            if verdict is not None:
                reply.update(verdict)
                return reply
        reply["render_failure"] = (
            f"Blender crashed {_JUDGE_ATTEMPTS} times while inspecting and rendering your "
            "scene: simplify it"
        )
        return reply

    async def _judge(
        self,
        blend: bytes,
        job: dict[str, Any],
        spec: RenderSpec,
        ctx: VerifierContext,
        limits: dict[str, Any],
    ) -> dict[str, Any] | None:
        """One judge run in a fresh session; None when Blender crashed (retry)."""
        async with ctx.sandbox(RUNTIME, **limits) as sb:
            await sb.write_files(
                {
                    **_WORKER_FILES,
                    "scene.blend": blend,
                    "job.json": json.dumps(job).encode(),
                },
                readonly=True,
            )
            sb.prefetch("report.json", max_bytes=_MAX_JUDGE_FILE)
            sb.prefetch("render.png", max_bytes=_MAX_JUDGE_FILE)
            if job["mesh_export"] is not None:
                sb.prefetch("scene.stl", max_bytes=int(limits["file_bytes"]))
            run = await sb.exec(
                ["python", "-c", _WORKER_LOADER, "judge"], timeout=spec.render_timeout_s
            )
            if run.timed_out:
                return {
                    "render_failure": f"inspecting and rendering the scene took longer than "
                    f"{spec.render_timeout_s:g}s (too heavy for a {spec.resolution[0]}x"
                    f"{spec.resolution[1]} preview?)"
                }
            if run.oom_killed:
                return {
                    "render_failure": "inspecting and rendering the scene ran out of memory "
                    f"(limit: {spec.memory_mb} MB beyond Blender's own): simplify it"
                }
            if run.returncode < 0:
                return None
            try:
                raw = await sb.read_file("report.json", max_bytes=_MAX_JUDGE_FILE)
                report = json.loads(raw)
            except (FileNotFoundError, BadInput, ValueError):
                tail = run.text("stderr").strip().splitlines()[-5:]
                raise InfraError(
                    f"render judge wrote no report (exit {run.returncode}): {' | '.join(tail)}"
                ) from None
            if not isinstance(report, dict) or report.get("judge_error"):
                raise InfraError(f"render judge failed: {report.get('judge_error')!r}")
            render = report.get("render")
            if isinstance(render, dict) and render.get("png"):
                try:
                    png = await sb.read_file("render.png", max_bytes=_MAX_JUDGE_FILE)
                    render["png_b64"] = base64.b64encode(png).decode()
                except FileNotFoundError:
                    render.update(ok=False, error="Blender wrote no image")
            scene = report.get("scene")
            export = scene.get("mesh_export") if isinstance(scene, dict) else None
            if isinstance(export, dict) and export.get("stl"):
                try:
                    export["stl_bytes"] = await sb.read_file(
                        "scene.stl", max_bytes=int(limits["file_bytes"])
                    )
                except (FileNotFoundError, BadInput) as exc:
                    export.clear()
                    export["error"] = f"the exported geometry could not be read: {exc}"
        report["worker"] = {"runtime": RUNTIME, "blender": report.pop("blender", None)}
        return report


async def _probe_runtime(ctx: VerifierContext, limits: dict[str, Any]) -> None:
    """Import bpy in a session of our own: a runtime that cannot is ``SandboxUnavailable``
    (an abstain), never the model's fail. When it can, the script exited 3 by itself.

    Raises:
        SandboxUnavailable: the blender runtime cannot import bpy.
    """
    async with ctx.sandbox(RUNTIME, **limits) as sb:
        run = await sb.exec(["python", "-c", "import bpy"], timeout=120)
    if not run.ok:
        tail = " | ".join(run.text("stderr").strip().splitlines()[-3:])
        raise SandboxUnavailable(
            f"the blender runtime cannot import bpy: {tail or run.returncode}",
            hint="run `verifiers sandbox check` (and .ci/setup.d/30-blender.sh)",
        )


class _TooLarge(Exception):
    """A file the script left is over its cap."""


async def _read_optional(sb: Any, name: str, cap: int) -> bytes | None:
    """A file the *script* controls: absent, not a regular file (a FIFO, a symlink) -> None;
    over ``cap`` -> ``_TooLarge``. Never an error result: the model chose what is there."""
    try:
        return bytes(await sb.read_file(name, max_bytes=cap))
    except FileNotFoundError:
        return None
    except BadInput as exc:
        if "bytes" in str(exc) or "too_large" in str(exc):
            raise _TooLarge(name) from None
        return None


def _untrusted_report(data: bytes | None) -> dict[str, Any]:
    """The script phase's report, rebuilt field by field from what the model's process
    wrote: only known keys, only the expected types, text made valid UTF-8 and capped."""
    if data is None:
        return {}
    try:
        raw = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return {}
    if not isinstance(raw, dict):
        return {}
    report: dict[str, Any] = {
        "ok": raw.get("ok") is True,
        "saved": raw.get("saved") is True,
        "save_error": text_capped(raw.get("save_error") or ""),
    }
    error = untrusted_error(raw.get("error"))
    if error is not None:
        report["error"] = error
        report["ok"] = False
    elif not report["ok"]:
        report["error"] = {"type": "unknown", "message": "the script's report says it failed"}
    return report


def _process_outcome(run: Any) -> dict[str, Any]:
    """How the script's process ended, in the terms ``_checks`` reports."""
    how, code = process_end(run)
    return {
        "how": how,
        "code": code,
        "seconds": run.duration_s,
        "max_rss_mb": run.peak_memory_mb,
    }


async def _analyze_mesh(
    reply: dict[str, Any], spec: RenderSpec, constraints: dict[str, Any], ctx: VerifierContext
) -> dict[str, Any] | None:
    """Run the mesh verifier's analysis on the exported scene geometry (None: not exported)."""
    scene = reply.get("scene")
    export = scene.pop("mesh_export", None) if isinstance(scene, dict) else None
    if not isinstance(export, dict):
        return None
    if export.get("error"):
        return {"error": str(export["error"])}
    assert spec.mesh is not None
    answer = await analyze_stl(
        ctx,
        bytes(export.pop("stl_bytes", b"")),
        constraints=constraints,
        reference=None,
        max_faces=spec.mesh.max_faces,
        timeout=spec.mesh.timeout_s,
        memory_mb=spec.mesh.memory_mb,
    )
    answer["objects"] = export.get("objects", [])
    return answer
