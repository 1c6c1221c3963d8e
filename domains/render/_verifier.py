"""``render.blender``: run a model-written bpy script in a warm, sandboxed Blender and judge it."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError, SandboxUnavailable
from verifiers.protocol import Verifier
from verifiers.registry import register
from verifiers.text import completion_text, last_code_block
from verifiers.types import Result, Trajectory

from ._checks import evaluate, no_script_result
from ._image import decode_png
from ._pool import BlenderPool, PoolSettings, WorkerCrashed, WorkerHung
from ._spec import RenderSpec

__all__ = ["BlenderRender"]

_MAX_ATTEMPTS = 2


@register("render.blender")
class BlenderRender(Verifier[RenderSpec]):
    """Runs the completion's last fenced Python block as a Blender scene script.

    The script runs headless in a warm Blender worker (Docker image or the bpy venv inside
    bubblewrap), then the scene is inspected and rendered with Cycles on CPU. A worker that
    dies is replaced and the job retried once on a fresh worker, so no job is lost to a crash;
    a crash that repeats on the same script is the script's doing and scores 0.

    Environment: ``VERIFIERS_BLENDER_BACKEND`` (auto|docker|local), ``VERIFIERS_BLENDER_PYTHON``,
    ``VERIFIERS_BLENDER_IMAGE``, ``VERIFIERS_BLENDER_WORKERS``, ``VERIFIERS_RENDER_OUTPUT_DIR``
    (also write each PNG there and put its path in ``details``).
    """

    Spec: ClassVar[type[RenderSpec]] = RenderSpec
    version: ClassVar[str] = "1"

    def __init__(self, settings: PoolSettings | None = None) -> None:
        self._settings = settings
        self._pool: BlenderPool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def pool(self) -> BlenderPool | None:
        """The current worker pool (None before the first job)."""
        return self._pool

    def _pool_for_loop(self) -> BlenderPool:
        """The worker pool of the running event loop (created on first use)."""
        loop = asyncio.get_running_loop()
        if self._pool is None or self._loop is not loop:
            if self._pool is not None:
                self._pool.kill_all()
            self._pool = BlenderPool(self._settings)
            self._loop = loop
        return self._pool

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
        job = {
            "id": str(trajectory.id or ""),
            "script": script,
            "timeout_s": spec.timeout_s,
            "memory_mb": spec.memory_mb,
            "render": {
                "resolution": list(spec.resolution),
                "samples": spec.samples,
                "denoise": spec.denoise,
                "threads": spec.threads,
                "exr_check": spec.exr_check,
            },
        }
        constraints: dict[str, Any] | None = None
        if spec.mesh is not None:
            job["mesh_export"] = {"objects": spec.mesh.objects, "max_faces": spec.mesh.max_faces}
            constraints = _mesh_constraints(spec)
        reply = await self._run(job, spec)
        mesh_answer = None
        if constraints is not None:
            mesh_answer = await _analyze_mesh(reply, spec, constraints, ctx)
        result = evaluate(reply, spec, reference, mesh_answer)
        out_dir = os.environ.get("VERIFIERS_RENDER_OUTPUT_DIR")
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

    async def _run(self, job: dict[str, Any], spec: RenderSpec) -> dict[str, Any]:
        """Run the job, replacing crashed workers; returns the reply to evaluate.

        Raises:
            SandboxUnavailable: no Blender worker can start (missing venv/image, broken GL).
            InfraError: the worker kept failing in a way the script cannot have caused.
        """
        budget = spec.timeout_s + spec.render_timeout_s + 15.0
        failure: InfraError | None = None
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                reply = await self._pool_for_loop().run(job, timeout=budget)
            except WorkerCrashed as exc:
                if exc.phase == "startup":
                    tail = exc.stderr.strip().splitlines()[-5:]
                    raise SandboxUnavailable(
                        f"{exc.message}: {' | '.join(tail) or 'no output'}",
                        hint="check the bpy venv / Blender image and its system libraries "
                        "(.ci/setup.d/30-blender.sh)",
                    ) from None
                failure = exc
                continue
            except WorkerHung as exc:
                if exc.phase == "render":
                    return _synthetic(
                        f"inspecting and rendering the scene took longer than "
                        f"{spec.render_timeout_s:g}s (too heavy for a {spec.resolution[0]}x"
                        f"{spec.resolution[1]} preview?)",
                        attempt,
                    )
                failure = exc
                continue
            reply["attempts"] = attempt
            if reply.get("worker_error"):
                failure = InfraError(f"Blender worker error: {reply['worker_error']}")
                continue
            crashed = reply.get("phase_a", {}).get("how") == "signal"
            if crashed and attempt < _MAX_ATTEMPTS:
                continue  # the pool recycled that worker; rule out a one-off fault
            return reply
        if isinstance(failure, WorkerCrashed) and failure.phase == "render":
            return _synthetic(
                "Blender crashed twice while rendering your scene (on two fresh workers that "
                "rendered a test scene fine): simplify it",
                _MAX_ATTEMPTS,
            )
        if isinstance(failure, WorkerCrashed) and failure.phase == "script":
            # Two healthy workers died while this script ran: the script killed its runner
            # (it shares the worker's uid). That must score 0, never abstain.
            return {
                "phase_a": {"how": "killed_worker", "code": 0},
                "attempts": _MAX_ATTEMPTS,
            }
        assert failure is not None
        raise InfraError(f"render.blender failed {_MAX_ATTEMPTS} times: {failure.message}")

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            if self._loop is asyncio.get_running_loop():
                await pool.aclose()
            else:
                pool.kill_all()


def _mesh_constraints(spec: RenderSpec) -> dict[str, Any]:
    """The spec's mesh constraint table, validated by ``mesh.constraints``' own model.

    Raises:
        BadInput: the table is not a valid ``mesh.constraints`` table.
    """
    from verifiers.domains.mesh import Constraints

    assert spec.mesh is not None
    try:
        table = Constraints.model_validate(spec.mesh.constraints)
    except ValidationError as exc:
        raise BadInput(f"spec.mesh.constraints is invalid: {exc}") from None
    return table.model_dump(mode="json", exclude_none=True)


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
    with tempfile.TemporaryDirectory(prefix="verifiers-render-mesh-") as tmp:
        path = Path(tmp) / "scene.stl"
        path.write_bytes(base64.b64decode(str(export.get("stl_b64", ""))))
        payload = {
            "path": str(path),
            "file_type": "stl",
            "constraints": constraints,
            "reference": None,
            "max_load_faces": spec.mesh.max_faces,
            "seed": 0,
        }
        answer = await ctx.run_in_worker(
            "verifiers.domains.mesh._analyze:analyze",
            payload,
            timeout=spec.mesh.timeout_s,
            memory_mb=spec.mesh.memory_mb,
        )
    if not isinstance(answer, dict):
        raise InfraError("mesh analysis returned no result")
    answer["objects"] = export.get("objects", [])
    return answer


def _synthetic(message: str, attempts: int) -> dict[str, Any]:
    """A reply for a script that ran but whose scene broke the renderer."""
    return {
        "phase_a": {"how": "exit", "code": 0, "report": {"ok": True, "saved": True}},
        "render_failure": message,
        "attempts": attempts,
    }
