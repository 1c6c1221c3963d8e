"""Mesh geometry verification: ``mesh.constraints`` (see docs/mesh.md).

Importing this package registers the verifier; trimesh, numpy and scipy are imported only in
the worker process that analyses a mesh (``verifiers[mesh]`` installs them).
"""

from __future__ import annotations

from ._spec import (
    BBox,
    Clearance,
    Constraints,
    Count,
    Extents,
    MeshSpec,
    MirrorSymmetry,
    Obstacle,
    Reference,
    Scalar,
    ScriptSettings,
    Thickness,
    Units,
)
from ._verifier import FORMATS, MeshConstraints

__all__ = [
    "FORMATS",
    "BBox",
    "Clearance",
    "Constraints",
    "Count",
    "Extents",
    "MeshConstraints",
    "MeshSpec",
    "MirrorSymmetry",
    "Obstacle",
    "Reference",
    "Scalar",
    "ScriptSettings",
    "Thickness",
    "Units",
]
