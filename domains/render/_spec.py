"""The ``render.blender`` spec: what to render and what the scene must contain.

The shape is a public contract (files written today keep working)::

    {"resolution": [64, 64], "samples": 8, "timeout_s": 60,
     "expect": {"camera": true, "min_lights": 1, "min_objects": 1,
                "objects": [{"name": "Table", "type": "MESH",
                             "bbox": {"min": [-1, -1, 0], "max": [1, 1, 1], "tol": 0.05}}]}}

Unknown keys are rejected everywhere (``bad_input`` naming the closest valid key); a spec for a
newer version says so with ``version`` (see ``verifiers.protocol.parse_spec``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verifiers.gates import validate_gates
from verifiers.protocol import Spec

__all__ = [
    "BBoxExpect",
    "ExpectSpec",
    "MeshCheck",
    "ObjectExpect",
    "ReferenceImage",
    "RenderSpec",
]

Vec3 = tuple[float, float, float]
STRUCTURAL_GATES = ("script", "finite", "camera", "render")
"""Gates every spec keeps (when the component exists: no camera expected, no render)."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BBoxExpect(_Open):
    """An axis-aligned world-space bounding box with an absolute tolerance per coordinate."""

    min: Vec3
    """Expected lower corner (x, y, z) in scene units."""
    max: Vec3
    """Expected upper corner (x, y, z) in scene units."""
    tol: float = Field(default=0.05, ge=0)
    """Allowed absolute difference of every corner coordinate."""


class ObjectExpect(_Open):
    """Objects the scene must contain, matched by name (exact or glob) and/or type."""

    name: str | None = None
    """Object name; ``*``/``?`` make it a glob (``"Leg*"`` matches ``Leg.001``)."""
    type: str | None = None
    """Blender object type: ``MESH``, ``LIGHT``, ``CAMERA``, ``CURVE``, ``EMPTY`` ..."""
    count: int | None = Field(default=None, ge=0)
    """Exact number of matching objects; None means at least ``min_count``."""
    min_count: int = Field(default=1, ge=0)
    """Minimum number of matching objects when ``count`` is not given."""
    bbox: BBoxExpect | None = None
    """World bbox of the matched objects (their union) must match within ``tol``."""
    position: Vec3 | None = None
    """World location of the (first) matched object."""
    position_tol: float = Field(default=0.05, ge=0)
    """Allowed distance from ``position``."""
    visible: bool | None = None
    """When true, the camera must see at least one matched object."""

    def label(self, index: int) -> str:
        """Component name for this expectation."""
        return f"object:{self.name or self.type or index}"


class ExpectSpec(_Open):
    """Scene expectations."""

    camera: bool = True
    """A scene camera must exist and see at least one object (and the image is checked)."""
    min_lights: int = Field(default=1, ge=0)
    """Light objects with energy > 0; world emission and emissive materials count as one each."""
    min_objects: int = Field(default=1, ge=0)
    """Renderable geometry objects (mesh, curve, text, ...) in the scene."""
    objects: list[ObjectExpect] = Field(default_factory=list)
    """Per-object expectations."""


class ReferenceImage(_Open):
    """A reference rendering for editing tasks, compared with PSNR/SSIM on luminance."""

    path: str
    """PNG path relative to the input file's directory; same resolution as the render."""
    min_psnr: float | None = 20.0
    """Minimum PSNR in dB (None: not checked)."""
    min_ssim: float | None = None
    """Minimum mean SSIM in [-1, 1] (None: not checked)."""


class MeshCheck(_Open):
    """Geometry constraints on the scene, checked by ``mesh.constraints``' own code.

    The matching objects' evaluated geometry (modifiers applied, world space) is exported as
    one STL and analysed exactly like a mesh artifact (see docs/mesh.md for the table).
    """

    objects: str = "*"
    """Glob over object names selecting the renderable objects to export."""
    constraints: dict[str, Any] = Field(default_factory=dict)
    """A ``mesh.constraints`` constraint table, e.g. ``{"closed": false, "bodies": 5}``."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Limit for the analysis."""
    memory_mb: int = Field(default=2048, gt=0)
    """Memory limit of the analysis worker."""
    max_faces: int = Field(default=2_000_000, gt=0)
    """More triangles than this in the selection fail the check without analysis."""


class RenderSpec(Spec):
    """Settings of ``render.blender``."""

    resolution: tuple[int, int] = (64, 64)
    """Render width and height in pixels."""
    samples: int = Field(default=8, ge=1, le=4096)
    """Cycles samples per pixel."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Wall-clock limit for the model's script."""
    render_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Wall-clock limit for inspecting and rendering the scene."""
    memory_mb: int = Field(default=1024, ge=64, le=65536)
    """Memory the model's script may allocate beyond Blender's own baseline."""
    denoise: bool = False
    """Cycles denoising (off by default: it costs ~100 ms per render and hides nothing)."""
    threads: int = Field(default=1, ge=1, le=64)
    """Render threads per job (the worker pool already runs jobs in parallel)."""
    exr_check: bool = False
    """Also save a float EXR and fail on NaN/inf pixels."""
    expect: ExpectSpec = Field(default_factory=ExpectSpec)
    """What the scene must contain."""
    min_std: float = Field(default=0.01, ge=0)
    """Not blank: standard deviation of luminance (0..1) must exceed this."""
    min_mean_luminance: float = Field(default=0.02, ge=0)
    """Not black: mean luminance (0..1) must exceed this."""
    max_magenta_fraction: float = Field(default=0.01, ge=0, le=1)
    """Missing-texture magenta: the fraction of magenta pixels must not exceed this."""
    reference_image: ReferenceImage | None = None
    """Optional reference rendering to compare with."""
    mesh: MeshCheck | None = None
    """Optional geometry constraints on (part of) the scene, via ``mesh.constraints``."""
    language: str = "python"
    """Fence tag of the code block holding the script."""
    gates: list[str] = Field(default_factory=lambda: list(STRUCTURAL_GATES))
    """Components that zero the reward when not fully met. The default is the structural
    ones (``script``, ``finite``, ``camera``, ``render``), which must always be listed: the
    other checks cannot run without them. Add ``not_black``, ``not_blank``, ``camera_view``,
    ``objects``, ``textures``, ``lights``, ``magenta``, ``object:<name>``, ``mesh``... to make
    them fatal instead of partial credit (see docs/render.md)."""

    def component_names(self) -> list[str]:
        """The components this spec produces, in report order."""
        names = ["script", "finite"]
        if self.expect.camera:
            names += ["camera", "camera_view"]
        names += ["lights", "textures", "objects"]
        names += [e.label(i) for i, e in enumerate(self.expect.objects)]
        if self.expect.camera:
            names += ["render", "not_blank", "not_black", "magenta"]
            if self.exr_check:
                names.append("exr")
            if self.reference_image is not None:
                names.append("reference")
        if self.mesh is not None:
            names.append("mesh")
        return names

    @model_validator(mode="after")
    def _gates_known(self) -> RenderSpec:
        validate_gates(self.component_names(), self.gates, STRUCTURAL_GATES)
        return self

    @field_validator("resolution")
    @classmethod
    def _resolution(cls, value: tuple[int, int]) -> tuple[int, int]:
        if not all(4 <= v <= 4096 for v in value):
            raise ValueError("resolution must be two integers between 4 and 4096")
        return value
