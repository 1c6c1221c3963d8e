"""The Godot engine binary and everything that differs between Godot versions, in one place.

``game.godot`` talks to the engine through three things only: the command line that runs the
trusted harness headless, the harness's GDScript source (its API differs between 3.x and 4.x:
``File`` vs ``FileAccess``, ``instance()`` vs ``instantiate()``, ``yield`` vs ``await``), and
the node class names that decide whether a node has a 3D or a 2D transform (``Spatial`` vs
``Node3D``). Godot 4 drops in as a second :class:`Engine` with its own harness file and
``runtime.toml``; nothing else in the domain names a version.

Why ``--fixed-fps``: each rendered frame then advances time by exactly ``1/fps`` s (one
physics step at the default 60 Hz), so N frames take as little wall time as the machine needs
and the same scene gives the same state on every backend and under load.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENGINE", "Engine"]

_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Engine:
    """One Godot major version as the verifier drives it."""

    major: int
    binary: str
    """The engine executable inside the runtime (on ``PATH``)."""
    runtime: str
    """The sandbox runtime that has it (``sandbox/images/<runtime>/runtime.toml``)."""
    harness_file: str
    """The trusted harness's GDScript, beside this module."""
    headless: tuple[str, ...]
    """Flags that make the binary run without a display or audio device."""
    spatial_types: frozenset[str]
    """Classes with a 3D ``transform`` (besides names ending in ``3D`` and ``CSG*``)."""
    canvas_types: frozenset[str]
    """Classes with a 2D ``position``/``rotation``/``scale`` (besides names ending in ``2D``)."""
    rigid_types: frozenset[str]
    """Physics bodies the engine moves (``at_rest`` reads their ``linear_velocity``)."""

    def argv(self, fps: int) -> list[str]:
        """The command that runs the harness in the job's work dir (the project root)."""
        return [
            self.binary,
            *self.headless,
            "--path",
            ".",
            "--fixed-fps",
            str(fps),
            "-s",
            "res://_harness.gd",
        ]

    def harness_source(self) -> bytes:
        """The harness's GDScript (written read-only into every job)."""
        return (_HERE / self.harness_file).read_bytes()

    def dimension(self, node_type: str, props: set[str]) -> int:
        """3 for a node with a 3D transform, 2 for a 2D canvas node, 0 for neither."""
        if node_type in self.spatial_types or node_type.endswith("3D"):
            return 3
        if node_type.startswith("CSG"):
            return 3
        if node_type in self.canvas_types or node_type.endswith("2D"):
            return 2
        if "transform" in props:
            return 3
        if props & {"position", "rotation", "scale"}:
            return 2
        return 0


ENGINE = Engine(
    major=3,
    binary="godot3-server",
    runtime="godot",
    harness_file="_harness3.gd",
    headless=(),  # the server build has only dummy video and audio drivers
    spatial_types=frozenset(
        {
            "Spatial",
            "MeshInstance",
            "RigidBody",
            "StaticBody",
            "KinematicBody",
            "Area",
            "CollisionShape",
            "CollisionPolygon",
            "Camera",
            "DirectionalLight",
            "OmniLight",
            "SpotLight",
            "Skeleton",
            "BoneAttachment",
            "RayCast",
            "Particles",
            "CPUParticles",
            "Path",
            "PathFollow",
            "GridMap",
            "VehicleBody",
            "VehicleWheel",
            "SoftBody",
            "ClippedCamera",
            "InterpolatedCamera",
            "ReflectionProbe",
            "GIProbe",
            "BakedLightmap",
            "Listener",
            "VisibilityNotifier",
            "VisibilityEnabler",
            "ImmediateGeometry",
            "MultiMeshInstance",
            "SpringArm",
            "Generic6DOFJoint",
            "HingeJoint",
            "PinJoint",
            "SliderJoint",
            "ConeTwistJoint",
            "Navigation",
            "NavigationMeshInstance",
            "ARVROrigin",
            "ARVRCamera",
            "ARVRController",
            "ARVRAnchor",
            "RemoteTransform",
            "AudioStreamPlayer3D",
            "Sprite3D",
            "AnimatedSprite3D",
            "Position3D",
        }
    ),
    canvas_types=frozenset(
        {
            "Node2D",
            "Sprite",
            "AnimatedSprite",
            "Polygon2D",
            "Line2D",
            "TileMap",
            "YSort",
            "Camera2D",
            "Light2D",
            "LightOccluder2D",
            "Particles2D",
            "CPUParticles2D",
            "RigidBody2D",
            "StaticBody2D",
            "KinematicBody2D",
            "Area2D",
            "CollisionShape2D",
            "CollisionPolygon2D",
            "RayCast2D",
            "Path2D",
            "PathFollow2D",
            "Position2D",
            "RemoteTransform2D",
            "Skeleton2D",
            "Bone2D",
            "MeshInstance2D",
            "MultiMeshInstance2D",
            "VisibilityNotifier2D",
            "VisibilityEnabler2D",
            "Navigation2D",
            "NavigationPolygonInstance",
            "TouchScreenButton",
            "AudioStreamPlayer2D",
            "BackBufferCopy",
            "Listener2D",
            "PinJoint2D",
            "GrooveJoint2D",
            "DampedSpringJoint2D",
        }
    ),
    rigid_types=frozenset({"RigidBody", "RigidBody2D", "VehicleBody"}),
)
"""The engine every ``game.godot`` job uses: Godot 3.2.3 headless (Debian ``godot3-server``)."""
