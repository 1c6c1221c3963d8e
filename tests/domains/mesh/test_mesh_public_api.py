"""``verifiers.domains.mesh``: its public names, pinned, and its registered name."""

from __future__ import annotations

import verifiers.domains.mesh as mesh_pkg
from api_pins import assert_pinned


def test_public_names_are_pinned() -> None:
    assert_pinned(
        mesh_pkg,
        [
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
        ],
        registers=["mesh.constraints"],
    )
