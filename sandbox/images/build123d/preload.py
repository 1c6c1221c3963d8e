"""Zygote preload of the ``build123d`` runtime: import build123d and OCP's checkers once per runner.

Runs in the sandbox runner's zygote before any job exists (see ``_runner._run_preload``), so
every cad.script job of this runtime is a fork of an interpreter with OCP already loaded
(importing build123d costs about a second; a fork costs milliseconds). It builds and meshes one
small box so OCP's lazy initialisation is done too. Trusted code from the runtime definition;
it never sees job data.
"""

import build123d
from OCP.BRepCheck import BRepCheck_Analyzer  # noqa: F401  (the trusted inspection uses it)
from OCP.BRepMesh import BRepMesh_IncrementalMesh
from OCP.STEPControl import STEPControl_Writer  # noqa: F401
from OCP.StlAPI import StlAPI_Writer  # noqa: F401

_box = build123d.Box(1, 1, 1).wrapped
BRepMesh_IncrementalMesh(_box, 0.1)
