"""Helpers for the mesh tests: run ``mesh.constraints`` on a file with given constraints."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from verifiers.domains.mesh import MeshConstraints, MeshSpec

from verifiers import Result, Trajectory, VerifierContext


def _judge(
    path: Path,
    constraints: dict[str, Any],
    *,
    reference: Any = None,
    base_dir: Path | None = None,
    **spec: Any,
) -> Result:
    """Verify ``path`` in this process (the worker target runs inline)."""
    base = base_dir or path.parent
    raw_spec = {"constraints": constraints, **spec}
    traj = Trajectory.model_validate(
        {
            "completion": "",
            "task": {"verifier": "mesh.constraints", "spec": raw_spec, "reference": reference},
            "artifacts": {"mesh": {"path": str(path.relative_to(base))}},
        }
    )
    ctx = VerifierContext(deadline=time.monotonic() + 120, base_dir=base)
    try:
        return asyncio.run(MeshConstraints().verify(traj, MeshSpec.model_validate(raw_spec), ctx))
    finally:
        ctx.cleanup()


@pytest.fixture(scope="session")
def meshes(shared_data: Path) -> Path:
    return shared_data / "meshes"


@pytest.fixture(scope="session")
def judge() -> Any:
    """``judge(path, constraints, reference=..., **spec) -> Result`` (in-process worker)."""
    return _judge
