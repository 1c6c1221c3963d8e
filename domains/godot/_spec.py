"""The ``game.godot`` spec: how long to run the scene and what it must contain and do.

The shape is a public contract::

    {"scene": "main.tscn", "frames": 120,
     "expect": {"nodes": [{"path": "Ball", "type": "RigidBody", "position": [0, 3, 0]}],
                "signals": [{"from": "Button", "signal": "pressed", "to": ".",
                             "method": "_on_pressed"}]},
     "probes": [{"kind": "at_rest", "node": "Ball", "max_speed": 0.05},
                {"kind": "contact", "node": "Ball", "other": "Floor"},
                {"kind": "position", "node": "Ball", "target": [0, 1, 0], "tol": 0.1}]}

Unknown keys are rejected everywhere (``bad_input`` naming the closest valid key).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifiers.gates import validate_gates
from verifiers.protocol import Spec

__all__ = [
    "STRUCTURAL_GATES",
    "AtRestProbe",
    "ContactProbe",
    "GodotSpec",
    "MovedProbe",
    "NodeExpect",
    "PositionProbe",
    "SignalExpect",
    "TreeExpect",
]

STRUCTURAL_GATES = ("scripts", "scene", "frames")
"""Gates every spec keeps: the other checks cannot run without them."""

Vec = Annotated[list[float], Field(min_length=2, max_length=3)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NodeExpect(_Open):
    """Nodes the scene must hold right after it is instanced (its ``_ready`` has run, one
    frame has passed), matched by path and/or name (exact or glob) and/or class."""

    path: str | None = None
    """Node path from the scene root (``.`` is the root, ``Level/Ball``); ``*``/``?`` glob."""
    name: str | None = None
    """Node name; ``*``/``?`` make it a glob."""
    type: str | None = None
    """Godot class as saved (``RigidBody``, ``Spatial``, ``Sprite``...)."""
    count: int | None = Field(default=None, ge=0)
    """Exact number of matching nodes; None means at least ``min_count``."""
    min_count: int = Field(default=1, ge=0)
    position: Vec | None = None
    """World position of the first match (3 numbers for 3D nodes, 2 for 2D)."""
    position_tol: float = Field(default=0.05, ge=0)
    """Allowed distance from ``position``."""

    def label(self, index: int) -> str:
        return f"node:{self.path or self.name or self.type or index}"


class SignalExpect(_Open):
    """A signal connection the scene persists (declared in the ``.tscn``, or connected in
    code with ``CONNECT_PERSIST``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: str = Field(alias="from")
    """Path of the emitting node (``.`` is the root)."""
    signal: str
    to: str = "."
    """Path of the receiving node."""
    method: str | None = None
    """Receiving method; None accepts any."""

    def label(self) -> str:
        return f"signal:{self.source}.{self.signal}"


class TreeExpect(_Open):
    """The node tree right after instancing."""

    nodes: list[NodeExpect] = Field(default_factory=list)
    signals: list[SignalExpect] = Field(default_factory=list)


class _Probe(_Open):
    node: str
    """Path of the node probed after the frames (``.`` is the root)."""
    label_: str | None = Field(default=None, alias="label")
    """Component name (default ``probe:<kind>:<node>``)."""

    def label(self) -> str:
        kind = getattr(self, "kind", "probe")
        return f"probe:{self.label_ or f'{kind}:{self.node}'}"


class PositionProbe(_Probe):
    """After the frames, the node's world position is ``target`` within ``tol``."""

    kind: Literal["position"]
    target: Vec
    tol: float = Field(default=0.1, ge=0)


class AtRestProbe(_Probe):
    """After the frames, a rigid body has come to rest (asleep, or slower than
    ``max_speed``), optionally inside a box (e.g. on the floor: ``min``/``max`` of its
    world position)."""

    kind: Literal["at_rest"]
    max_speed: float = Field(default=0.05, ge=0)
    min: Vec | None = None
    max: Vec | None = None


class MovedProbe(_Probe):
    """Between the start and the end of the frames, the node moved at least
    ``min_distance`` (along ``direction`` when given: the displacement's component)."""

    kind: Literal["moved"]
    min_distance: float = Field(gt=0)
    direction: Vec | None = None


class ContactProbe(_Probe):
    """During the frames, the node touched ``other`` (a collision happened).

    Decided by the trusted harness each frame, by asking the physics space with the node's
    own shapes (not by contact monitoring or signals, which the model's scripts control), and
    bound to the run's proof. With ``physics`` (the default) the node must be a rigid body
    that got there by physics: a frame in which it jumped further than its velocity explains
    (a script set its position) before the first contact fails the probe."""

    kind: Literal["contact"]
    other: str
    """Path of the other collision object (``.`` is the root)."""
    physics: bool = True


Probe = Annotated[
    PositionProbe | AtRestProbe | MovedProbe | ContactProbe, Field(discriminator="kind")
]


class GodotSpec(Spec):
    """Settings of ``game.godot``."""

    scene: str = Field(default="main.tscn", pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.tscn$")
    """The entry scene among the completion's files (relative to the project root)."""
    frames: int = Field(default=60, ge=1, le=36000)
    """Frames to run after instancing (each one physics step of ``1/fps`` s)."""
    fps: int = Field(default=60, ge=1, le=1000)
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    """Wall-clock limit for the engine run (a hung ``_ready``/``_process`` is the model's fail)."""
    memory_mb: int = Field(default=1024, ge=128, le=65536)
    max_nodes: int = Field(default=5000, ge=1, le=1_000_000)
    """More nodes than this in the running scene fail the ``frames`` gate (a huge scene)."""
    max_files: int = Field(default=32, ge=1, le=1000)
    max_file_bytes: int = Field(default=1 << 20, ge=1, le=64 << 20)
    expect: TreeExpect = Field(default_factory=TreeExpect)
    probes: list[Probe] = Field(default_factory=list)
    gates: list[str] = Field(default_factory=lambda: list(STRUCTURAL_GATES))
    """Components that zero the reward when not fully met. Must include ``scripts``,
    ``scene`` and ``frames``; add ``node:<x>``, ``signal:<x>``, ``probe:<x>`` to make them
    fatal instead of partial credit."""

    def component_names(self) -> list[str]:
        names = list(STRUCTURAL_GATES)
        names += [e.label(i) for i, e in enumerate(self.expect.nodes)]
        names += [s.label() for s in self.expect.signals]
        names += [p.label() for p in self.probes]
        return names

    @model_validator(mode="after")
    def _gates_known(self) -> GodotSpec:
        validate_gates(self.component_names(), self.gates, STRUCTURAL_GATES)
        return self
