"""Settings of ``mesh.constraints``: where the mesh comes from and what it must satisfy.

Everything here is plain pydantic (no trimesh), so ``import verifiers`` stays light. The
constraint bodies forbid unknown keys (a typo such as ``abs_tolerance`` must not silently
fall back to a default); the top-level spec and the constraint table accept unknown keys,
which are reported back in ``details["ignored"]``.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifiers.protocol import Spec

# The public names are listed once, in the package's ``__all__`` (domains/mesh/__init__.py).

Vec3 = Annotated[list[float], Field(min_length=3, max_length=3)]

UNIT_MM: dict[str, float] = {
    "um": 0.001,
    "mm": 1.0,
    "cm": 10.0,
    "m": 1000.0,
    "in": 25.4,
    "ft": 304.8,
}
"""Length of each supported unit in millimetres."""

UnitName = Literal["um", "mm", "cm", "m", "in", "ft"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Extents(_Body):
    """Axis-aligned bounding-box size ``[x, y, z]``; each axis within
    ``max(abs_tol, rel_tol * target)``."""

    target: Vec3
    """Expected size along x, y, z (spec units)."""
    abs_tol: float = Field(default=0.0, ge=0)
    """Absolute tolerance per axis."""
    rel_tol: float = Field(default=0.01, ge=0)
    """Tolerance as a fraction of each axis's target."""
    any_order: bool = False
    """Compare sorted sizes: the part may lie in any axis-aligned orientation."""


class BBox(_Body):
    """Bounding box corners; each coordinate within ``abs_tol``."""

    min: Vec3
    max: Vec3
    abs_tol: float = Field(default=0.0, ge=0)
    rel_tol: float = Field(default=0.01, ge=0)
    """Tolerance as a fraction of the target box size on that axis."""


class _TargetOrRange(_Body):
    """A ``target`` and/or a ``[min, max]`` range: a check that gives neither checks nothing."""

    give: ClassVar[str]
    """The fix the error names."""

    @model_validator(mode="after")
    def _something(self) -> Self:
        if all(getattr(self, key) is None for key in ("target", "min", "max")):
            raise ValueError(self.give)
        return self


class Scalar(_TargetOrRange):
    """A measured number: ``target`` within ``max(abs_tol, rel_tol * |target|)`` and/or
    inside ``[min, max]``."""

    target: float | None = None
    rel_tol: float = Field(default=0.01, ge=0)
    abs_tol: float = Field(default=0.0, ge=0)
    min: float | None = None
    max: float | None = None
    give = "give 'target' (with rel_tol/abs_tol) or 'min'/'max'"


class Count(_TargetOrRange):
    """An integer count: exactly ``target`` or inside ``[min, max]``."""

    target: int | None = Field(default=None, ge=0)
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    give = "give 'target' or 'min'/'max'"


class Units(_Body):
    """The unit the task's numbers are in, and a plausible size to detect unit mix-ups."""

    unit: UnitName = "mm"
    size_range: tuple[float, float] | None = None
    """Allowed largest extent ``[lo, hi]`` (spec units). Without it the ``extents`` or
    ``bbox`` target gives the expected size."""


class MirrorSymmetry(_Body):
    """Mirror symmetry about a plane: mean distance of the reflected surface to the surface,
    as a fraction of the bounding-box diagonal, at most ``tol``."""

    plane: Literal["yz", "xz", "xy"] | Vec3 = "yz"
    """``yz`` mirrors x, ``xz`` mirrors y, ``xy`` mirrors z; or a plane normal."""
    through: Literal["center", "origin"] | Vec3 = "center"
    """A point on the plane: the bounding-box centre, the origin, or coordinates."""
    tol: float = Field(default=0.01, gt=0)
    samples: int = Field(default=4096, ge=64, le=200_000)


class Thickness(_Body):
    """Minimum wall thickness, sampled: inward rays from ``samples`` surface points."""

    value: float = Field(gt=0)
    samples: int = Field(default=1024, ge=16, le=100_000)
    allowed_fraction: float = Field(default=0.0, ge=0, le=1)
    """Share of samples allowed below ``value`` (sharp edges, chamfers)."""


class Box(_Body):
    min: Vec3
    max: Vec3


class Sphere(_Body):
    center: Vec3
    radius: float = Field(default=0.0, ge=0)


class Obstacle(_Body):
    """A keep-out region: exactly one of ``box``, ``sphere`` or ``point``."""

    name: str | None = None
    box: Box | None = None
    sphere: Sphere | None = None
    point: Vec3 | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        if sum(x is not None for x in (self.box, self.sphere, self.point)) != 1:
            raise ValueError("an obstacle needs exactly one of 'box', 'sphere', 'point'")
        return self


class Clearance(_Body):
    """The part keeps at least ``min`` away from every obstacle (sampled surface)."""

    obstacles: list[Obstacle] = Field(min_length=1)
    min: float = Field(default=0.0, ge=0)
    samples: int = Field(default=20_000, ge=100, le=1_000_000)


class Constraints(BaseModel):
    """The constraint table (``spec.constraints``): each set key is one component."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    closed: bool = True
    """Gate: the mesh must be a closed volume (watertight, consistently wound, volume > 0).
    Set False for open surfaces; then volume and genus cannot be checked."""
    extents: Extents | None = None
    bbox: BBox | None = None
    volume: Scalar | None = None
    area: Scalar | None = None
    bodies: Annotated[int, Field(ge=0)] | Count | None = None
    genus: Annotated[int, Field(ge=0)] | Count | None = None
    max_faces: Annotated[int, Field(ge=1)] | None = None
    units: UnitName | Units | None = None
    mirror_symmetry: MirrorSymmetry | list[MirrorSymmetry] | None = None
    min_thickness: Annotated[float, Field(gt=0)] | Thickness | None = None
    inside: list[Vec3] | None = None
    outside: list[Vec3] | None = None
    clearance: Clearance | None = None

    @model_validator(mode="after")
    def _units_need_a_size(self) -> Self:
        units = self.units
        if units is not None and self.extents is None and self.bbox is None:
            if not isinstance(units, Units) or units.size_range is None:
                raise ValueError("'units' needs 'extents', 'bbox' or units.size_range")
        return self


class ScriptSettings(BaseModel):
    """Script mode: the completion's last python block runs in the sandbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str = "python"
    timeout_s: float = Field(default=60.0, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    output_max_bytes: int = Field(default=64 << 20, gt=0)
    """Largest ``output.<ext>`` read back."""
    formats: list[str] = Field(default=["stl", "obj", "ply", "glb", "gltf", "off"])
    """Extensions tried for ``output.<ext>``, in order."""


class Reference(BaseModel):
    """``task.reference`` for similarity: a mesh and thresholds."""

    model_config = ConfigDict(extra="allow", frozen=True)

    mesh: str | dict[str, str]
    """Path relative to the input file, ``{"path": ...}``, ``{"base64": ..., "name": ...}``
    or ``{"artifact": name}``."""
    chamfer_max: float | None = Field(default=None, ge=0)
    """Pass when the CAD-Recode Chamfer distance (x1000, unit-cube normalised) is at most
    this."""
    iou_min: float | None = Field(default=None, ge=0, le=1)
    """Pass when the volumetric IoU is at least this."""
    samples: int = Field(default=8192, ge=64, le=200_000)
    normalize: bool = True
    """Normalise both meshes to the unit cube before IoU too (Chamfer always is)."""


class MeshSpec(Spec):
    """Settings of ``mesh.constraints``."""

    source: Literal["artifact", "script"] = "artifact"
    """``artifact``: a mesh file in ``trajectory.artifacts``; ``script``: run the
    completion's last python block in the sandbox; it must write ``output.<ext>``."""
    artifact: str = "mesh"
    """Artifact name (``source="artifact"``)."""
    format: str | None = None
    """File type override (``stl``, ``obj``, ``ply``, ``glb``, ``gltf``, ``off``); by default
    the artifact's suffix."""
    constraints: Constraints = Field(default_factory=Constraints)
    script: ScriptSettings = Field(default_factory=ScriptSettings)
    timeout_s: float = Field(default=120.0, gt=0)
    """Time limit of the analysis worker (wall clock: running past it is the machine's
    fault, an ``error``)."""
    cpu_budget_s: float | None = Field(default=None, gt=0)
    """CPU seconds the analysis of one mesh may use (default: half of ``timeout_s``). A mesh
    that needs more is the model's ``fail`` with feedback: CPU time, unlike wall time, does not
    grow when the machine is loaded, so this separates a mesh that is too costly to analyse
    from a worker that was starved."""
    memory_mb: int = Field(default=4096, gt=0)
    """Address-space limit of the analysis worker."""
    max_file_bytes: int = Field(default=256 << 20, gt=0)
    """Larger mesh files fail the gate without being parsed."""
    max_load_faces: int = Field(default=5_000_000, gt=0)
    """Meshes with more faces fail the gate before parsing (binary STL) or after it."""
    seed: int = 0
    """Seed of every surface sample (verdicts are reproducible)."""
