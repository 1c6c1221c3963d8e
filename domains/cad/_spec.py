"""The ``cad.script`` spec: which CAD library runs the script and what the part must be.

The shape is a public contract::

    {"library": "cadquery", "solids": 1,
     "expect": {"faces": {"target": 7}, "volume": {"target": 3600, "rel_tol": 0.01},
                "bbox": {"min": [-20, -10, 0], "max": [20, 10, 5], "abs_tol": 0.01},
                "holes": [{"diameter": 6, "count": 1}]},
     "mesh": {"genus": 1}}

``expect.volume``/``bbox``/``faces``/``edges`` reuse ``mesh.constraints``' ``Scalar``,
``BBox`` and ``Count`` models (the same tolerances and messages), measured exactly on the
B-rep. ``mesh`` is a ``mesh.constraints`` table checked on the judge's tessellation.
Unknown keys are rejected everywhere.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from verifiers.domains.mesh import BBox, Count, Scalar

from verifiers.gates import validate_gates
from verifiers.protocol import Spec

__all__ = ["STRUCTURAL_GATES", "CadExpect", "CadSpec", "HoleExpect", "LIBRARIES"]

STRUCTURAL_GATES = ("script", "valid")
"""Gates every spec keeps: nothing can be measured on a part that was not built or is not a
valid solid."""
LIBRARIES = ("cadquery", "build123d")
"""Each is its own sandbox runtime (they need different OCP builds)."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HoleExpect(_Open):
    """Holes (concave cylindrical faces sharing an axis and radius) of a diameter."""

    diameter: float = Field(gt=0)
    tol: float = Field(default=0.05, ge=0)
    """Allowed absolute difference of the diameter."""
    count: int | None = Field(default=None, ge=0)
    """Exact number of such holes; None means at least ``min_count``."""
    min_count: int = Field(default=1, ge=0)

    def label(self) -> str:
        return f"hole:{self.diameter:g}"


class CadExpect(_Open):
    """CAD-level expectations, measured on the B-rep itself."""

    faces: int | Count | None = None
    edges: int | Count | None = None
    volume: Scalar | None = None
    bbox: BBox | None = None
    holes: list[HoleExpect] = Field(default_factory=list)


class CadSpec(Spec):
    """Settings of ``cad.script``."""

    library: Literal["cadquery", "build123d"] = "cadquery"
    """The CAD library (and sandbox runtime) that runs the script."""
    result: str = Field(default="result", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The script's variable holding the part."""
    solids: int | None = Field(default=1, ge=1)
    """Exact number of solids; None accepts any number (at least one)."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Wall-clock limit of the model's script."""
    judge_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Wall-clock limit of the trusted inspection (a part too complex for it fails)."""
    memory_mb: int = Field(default=2048, ge=256, le=65536)
    max_faces: int = Field(default=20_000, ge=1, le=10_000_000)
    """More B-rep faces than this fail ``valid`` without further analysis."""
    deflection: float = Field(default=1e-3, gt=0, le=0.1)
    """Tessellation's linear deflection as a fraction of the bounding-box diagonal."""
    max_mesh_faces: int = Field(default=2_000_000, gt=0)
    expect: CadExpect = Field(default_factory=CadExpect)
    mesh: dict[str, Any] | None = None
    """A ``mesh.constraints`` table for the tessellation (e.g. ``{"genus": 1}``)."""
    mesh_timeout_s: float = Field(default=60.0, gt=0)
    language: str = "python"
    gates: list[str] = Field(default_factory=lambda: list(STRUCTURAL_GATES))
    """Components that zero the reward when not fully met (``script`` and ``valid`` always;
    add ``faces``, ``volume``, ``hole:6``, ``mesh``... to make them fatal)."""

    def component_names(self) -> list[str]:
        names = list(STRUCTURAL_GATES)
        for key in ("faces", "edges", "volume", "bbox"):
            if getattr(self.expect, key) is not None:
                names.append(key)
        names += [h.label() for h in self.expect.holes]
        names.append("step")
        if self.mesh is not None:
            names.append("mesh")
        return names

    @model_validator(mode="after")
    def _gates_known(self) -> CadSpec:
        validate_gates(self.component_names(), self.gates, STRUCTURAL_GATES)
        return self
