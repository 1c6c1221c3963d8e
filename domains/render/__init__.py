"""Render-error verifier for model-written Blender scenes: ``render.blender``.

Importing this package registers the verifier; it never imports ``bpy``: Blender runs only in
the ``blender`` sandbox runtime (see ``docs/render.md``).
"""

from ._checks import GEOMETRY_TYPES
from ._spec import BBoxExpect, ExpectSpec, MeshCheck, ObjectExpect, ReferenceImage, RenderSpec
from ._verifier import RUNTIME, BlenderRender

__all__ = [
    "GEOMETRY_TYPES",
    "RUNTIME",
    "BBoxExpect",
    "BlenderRender",
    "ExpectSpec",
    "MeshCheck",
    "ObjectExpect",
    "ReferenceImage",
    "RenderSpec",
]
