"""Godot scene verifier: ``game.godot`` (headless Godot in the ``godot`` sandbox runtime).

Importing this package registers the verifier; the engine runs only in the sandbox (see
``docs/godot.md``).
"""

from ._engine import ENGINE, Engine
from ._spec import (
    AtRestProbe,
    GodotSpec,
    MovedProbe,
    NodeExpect,
    PositionProbe,
    SignalExpect,
    TreeExpect,
)
from ._tscn import SceneState, parse_tscn
from ._verifier import RUNTIME, GodotScene

__all__ = [
    "ENGINE",
    "RUNTIME",
    "AtRestProbe",
    "Engine",
    "GodotScene",
    "GodotSpec",
    "MovedProbe",
    "NodeExpect",
    "PositionProbe",
    "SceneState",
    "SignalExpect",
    "TreeExpect",
    "parse_tscn",
]
