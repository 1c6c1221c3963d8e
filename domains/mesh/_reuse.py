"""``mesh.constraints`` reused by other verifiers on a mesh they produced themselves.

``render.blender`` exports the scene's geometry and ``cad.script`` tessellates the model's
part; both hand the STL to the same analysis ``mesh.constraints`` runs (in a worker process,
trimesh never in the host) and score it as one ``mesh`` component. The three steps are
written here once: validate the spec's table with the mesh verifier's own model
(:func:`constraints_table`), analyse the STL (:func:`analyze_stl`), turn the answer into the
component (:func:`mesh_check`: the share of constraints met, 0 when the mesh gate failed).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError
from verifiers.gates import CheckOutcome

from ._spec import Constraints

__all__ = ["analyze_stl", "constraints_table", "mesh_check"]


def constraints_table(table: Any, where: str) -> dict[str, Any]:
    """``table`` validated by ``mesh.constraints``' own model, as the analysis reads it.

    Raises:
        BadInput: not a valid ``mesh.constraints`` table (``where`` names the spec field).
    """
    try:
        model = Constraints.model_validate(table)
    except ValidationError as exc:
        raise BadInput(f"{where} is not a valid mesh.constraints table: {exc}") from None
    dumped: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return dumped


async def analyze_stl(
    ctx: VerifierContext,
    stl: bytes,
    *,
    constraints: dict[str, Any],
    reference: dict[str, Any] | None,
    max_faces: int,
    timeout: float,
    memory_mb: int | None = None,
) -> dict[str, Any]:
    """``mesh.constraints``' analysis of ``stl`` in a worker process.

    Raises:
        InfraError: the analysis returned no answer.
    """
    with tempfile.TemporaryDirectory(prefix="verifiers-mesh-reuse-") as tmp:
        path = Path(tmp) / "part.stl"
        path.write_bytes(stl)
        answer = await ctx.run_in_worker(
            "verifiers.domains.mesh._analyze:analyze",
            {
                "path": str(path),
                "file_type": "stl",
                "constraints": constraints,
                "reference": reference,
                "max_load_faces": max_faces,
                "seed": 0,
            },
            timeout=timeout,
            memory_mb=memory_mb,
        )
    if not isinstance(answer, dict):
        raise InfraError("mesh analysis returned no result")
    return answer


def mesh_check(answer: dict[str, Any] | None, missing: str) -> CheckOutcome:
    """The ``mesh`` component of an analysis answer (``missing``: why there is none)."""
    if answer is None:
        return CheckOutcome("mesh", 0.0, False, f"mesh: {missing}")
    if answer.get("error"):
        return CheckOutcome("mesh", 0.0, False, f"mesh: {answer['error']}")
    gate = answer.get("gate", {})
    if not gate.get("passed", False):
        return CheckOutcome("mesh", 0.0, False, f"mesh: {gate.get('reason', 'gate failed')}")
    checks = answer.get("checks", [])
    if not checks:
        return CheckOutcome("mesh", 1.0)
    passed = sum(1 for c in checks if c.get("passed"))
    failed = "; ".join(str(c.get("message")) for c in checks if not c.get("passed"))
    return CheckOutcome("mesh", passed / len(checks), False, f"mesh: {failed}" if failed else "")
