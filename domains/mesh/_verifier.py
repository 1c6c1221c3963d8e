"""``mesh.constraints``: a mesh (file or script output) against geometric constraints.

Host side only: resolve where the mesh comes from (an artifact, inline base64, or a script
run in the sandbox), hand a JSON payload to :func:`verifiers.domains.mesh._analyze.analyze`
in a worker process, and turn its JSON answer into a :class:`~verifiers.types.Result`.
Nothing here imports trimesh.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from verifiers.context import VerifierContext
from verifiers.errors import BadInput
from verifiers.protocol import Verifier
from verifiers.registry import register
from verifiers.text import completion_text, last_code_block
from verifiers.types import Result, Trajectory

from ._spec import MeshSpec, Reference

__all__ = ["FORMATS", "MeshConstraints"]

FORMATS = ("stl", "obj", "ply", "glb", "gltf", "off")
"""File types accepted (by suffix, or ``spec.format``)."""

_TARGET = "verifiers.domains.mesh._analyze:analyze"


def _file_type(name: str, override: str | None) -> str:
    kind = (override or Path(name).suffix.lstrip(".")).lower()
    if kind not in FORMATS:
        raise BadInput(
            f"cannot tell the mesh format of {name!r}; set spec.format to one of {', '.join(FORMATS)}"
        )
    return kind


def _missing_artifact(trajectory: Trajectory, name: str, ctx: VerifierContext) -> str | None:
    """Why the agent's mesh is absent (it never wrote it), or None when there is one.

    An absent mesh is the model's failure (``fail``, reward 0), never an abstain: a model
    must not dodge a certain 0 by not writing the file. A path that escapes the input file's
    directory is still the input's fault (``ctx.artifact_path`` raises ``bad_input``).
    """
    artifact = trajectory.artifacts.get(name)
    if artifact is None:
        have = ", ".join(sorted(trajectory.artifacts)) or "none"
        return f"no mesh: the trajectory has no artifact {name!r} (artifacts: {have})"
    if artifact.path is None:
        return None
    base = ctx.base_dir.resolve()
    path = (base / artifact.path).resolve()
    if base != path and base not in path.parents:
        return None  # escapes: artifact_path reports it as bad input
    if not path.is_file():
        return f"no mesh: the artifact file {artifact.path!r} was not written"
    return None


CPU_SHARE = 0.5
"""Default CPU budget of the analysis as a share of its wall-clock limit: on a quiet machine
a costly mesh reaches the budget (the model's fail) long before the limit (the machine's
error); on a loaded one the wall limit comes first and the item abstains, as it should."""


@register("mesh.constraints")
class MeshConstraints(Verifier[MeshSpec]):
    """Gate (loads, non-empty, finite, closed volume) then one component per constraint.

    Reward = share of constraints passed (1.0 when the gate passes and there are none);
    ``details["all_passed"]`` says whether every one passed. See docs/mesh.md.
    """

    version: ClassVar[str] = "2"
    Spec = MeshSpec

    async def verify(self, trajectory: Trajectory, spec: MeshSpec, ctx: VerifierContext) -> Result:
        with tempfile.TemporaryDirectory(prefix="verifiers-mesh-") as tmp:
            work = Path(tmp)
            if spec.source == "script":
                got = await self._run_script(trajectory, spec, ctx, work)
                if isinstance(got, Result):
                    return got
                path, file_type = got
            else:
                missing = _missing_artifact(trajectory, spec.artifact, ctx)
                if missing is not None:
                    return self._gate_failed(missing, {"artifact": spec.artifact})
                path = ctx.artifact_path(trajectory, spec.artifact)
                artifact = trajectory.artifacts[spec.artifact]
                file_type = _file_type(artifact.name or artifact.path or path.name, spec.format)
            size = path.stat().st_size
            if size > spec.max_file_bytes:
                return self._gate_failed(
                    f"the mesh file is {size} bytes, over the {spec.max_file_bytes}-byte limit",
                    {"file_bytes": size},
                )
            reference = self._reference(trajectory, ctx, work)
            payload: dict[str, Any] = {
                "path": str(path),
                "file_type": file_type,
                "constraints": spec.constraints.model_dump(mode="json", exclude_none=True),
                "reference": reference,
                "max_load_faces": spec.max_load_faces,
                "seed": spec.seed,
                "cpu_budget_s": (
                    spec.cpu_budget_s
                    if spec.cpu_budget_s is not None
                    else CPU_SHARE * min(spec.timeout_s, max(ctx.remaining(), 0.001))
                ),
            }
            answer = await ctx.run_in_worker(
                _TARGET, payload, timeout=spec.timeout_s, memory_mb=spec.memory_mb
            )
        return self._result(answer, spec)

    # -- inputs --------------------------------------------------------------------------

    async def _run_script(
        self, trajectory: Trajectory, spec: MeshSpec, ctx: VerifierContext, work: Path
    ) -> tuple[Path, str] | Result:
        """Run the completion's last python block in the sandbox; fetch ``output.<ext>``."""
        code = last_code_block(completion_text(trajectory), "python")
        if code is None or not code.strip():
            return Result.failed(
                "no python code block found: script mode runs the last ```python block, "
                "which must write output.stl (or .obj/.ply/.glb/.off) in the working directory",
                components={"gate": 0.0},
                details={"gate": {"passed": False, "reason": "no code block"}, "all_passed": False},
            )
        settings = spec.script
        timeout = min(settings.timeout_s, max(1.0, ctx.remaining()))
        async with ctx.sandbox(
            settings.image,
            timeout_s=timeout,
            memory_mb=settings.memory_mb,
            file_bytes=max(settings.output_max_bytes, 1 << 20),
        ) as sb:
            await sb.write_files({"main.py": code})
            run = await sb.exec(["python3", "main.py"], timeout=timeout)
            log = {
                "returncode": run.returncode,
                "timed_out": run.timed_out,
                "oom_killed": run.oom_killed,
                "stderr_tail": run.text("stderr")[-2000:],
                "stdout_tail": run.text("stdout")[-1000:],
            }
            if not run.ok:
                if run.timed_out:
                    why = f"the script timed out after {timeout:g} s"
                elif run.oom_killed:
                    why = f"the script ran out of memory ({settings.memory_mb} MiB)"
                else:
                    tail = run.text("stderr").strip().splitlines()[-3:]
                    why = f"the script exited with code {run.returncode}: " + " | ".join(tail)
                return self._gate_failed(why, {"script": log})
            for ext in settings.formats:
                try:
                    data = await sb.read_file(f"output.{ext}", max_bytes=settings.output_max_bytes)
                except FileNotFoundError:
                    continue
                except BadInput:
                    return self._gate_failed(
                        f"output.{ext} is larger than {settings.output_max_bytes} bytes",
                        {"script": log},
                    )
                # Its own folder: trimesh resolves a file's references (OBJ materials, glTF
                # buffers) inside the file's folder, and a base64 reference is written to
                # ``work``. The output must not be able to name the reference as its data.
                (work / "output").mkdir()
                path = work / "output" / f"output.{ext}"
                path.write_bytes(data)
                return path, _file_type(path.name, spec.format)
        names = ", ".join(f"output.{e}" for e in settings.formats)
        return self._gate_failed(
            f"the script ran but wrote none of {names} in its working directory", {"script": log}
        )

    def _reference(
        self, trajectory: Trajectory, ctx: VerifierContext, work: Path
    ) -> dict[str, Any] | None:
        """``task.reference`` resolved to a file on this host, or None."""
        raw = trajectory.task.reference
        if raw is None:
            return None
        if isinstance(raw, str):
            raw = {"mesh": raw}
        try:
            ref = Reference.model_validate(raw)
        except ValidationError as exc:
            raise BadInput(f"task.reference for mesh.constraints is invalid: {exc}") from None
        source = ref.mesh
        if isinstance(source, str):
            source = {"path": source}
        if "artifact" in source:
            name = source["artifact"]
            path = ctx.artifact_path(trajectory, name)
            art = trajectory.artifacts[name]
            label = art.name or art.path or path.name
        elif "path" in source:
            path = ctx.resolve_path(source["path"])
            label = source["path"]
        elif "base64" in source:
            label = source.get("name", "")
            kind = _file_type(label, source.get("format"))
            try:
                data = base64.b64decode(source["base64"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise BadInput(f"task.reference.mesh is not valid base64: {exc}") from None
            path = work / f"ref-{hashlib.sha256(data).hexdigest()[:12]}.{kind}"
            path.write_bytes(data)
        else:
            raise BadInput("task.reference.mesh needs a path, 'path', 'base64' or 'artifact'")
        return {
            "path": str(path),
            "file_type": _file_type(label, source.get("format")),
            "chamfer_max": ref.chamfer_max,
            "iou_min": ref.iou_min,
            "samples": ref.samples,
            "normalize": ref.normalize,
        }

    # -- verdicts ------------------------------------------------------------------------

    @staticmethod
    def _gate_failed(reason: str, details: dict[str, Any]) -> Result:
        return Result.failed(
            f"gate failed: {reason}",
            components={"gate": 0.0},
            details={"gate": {"passed": False, "reason": reason}, "all_passed": False, **details},
        )

    @staticmethod
    def _result(answer: dict[str, Any], spec: MeshSpec) -> Result:
        gate = answer["gate"]
        stats = answer.get("stats", {})
        ignored = sorted(set(spec.constraints.model_extra or {}))
        if not gate["passed"]:
            return Result.failed(
                f"gate failed: {gate['reason']}",
                components={"gate": 0.0},
                details={"gate": gate, "stats": stats, "all_passed": False, "ignored": ignored},
            )
        checks: list[dict[str, Any]] = answer["checks"]
        components = {"gate": 1.0}
        components.update({c["name"]: 1.0 if c["passed"] else 0.0 for c in checks})
        passed = sum(1 for c in checks if c["passed"])
        reward = passed / len(checks) if checks else 1.0
        failed = [c for c in checks if not c["passed"]]
        if failed:
            lines = [f"{len(failed)} of {len(checks)} constraints violated:"]
            lines += [f"- {c['name']}: {c['message']}" for c in failed]
            feedback = "\n".join(lines)
        else:
            feedback = f"all {len(checks)} constraints met" if checks else "mesh is valid"
        if ignored:
            feedback += f"\n(ignored unknown constraints: {', '.join(ignored)})"
        details = {
            "gate": gate,
            "stats": stats,
            "checks": checks,
            "passed": passed,
            "total": len(checks),
            "all_passed": not failed,
            "ignored": ignored,
        }
        return Result.scored(reward, components=components, feedback=feedback, details=details)
