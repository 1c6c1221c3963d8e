"""Render-error verifier for model-written Blender scenes: ``render.blender``.

Importing this package registers the verifier; it never imports ``bpy`` (Blender runs only in
worker processes with their own Python, see ``docs/render.md``).
"""

from ._checks import GEOMETRY_TYPES
from ._pool import BlenderPool, PoolSettings, reap_containers
from ._spec import BBoxExpect, ExpectSpec, MeshCheck, ObjectExpect, ReferenceImage, RenderSpec
from ._verifier import BlenderRender

__all__ = [
    "GEOMETRY_TYPES",
    "BBoxExpect",
    "BlenderPool",
    "BlenderRender",
    "ExpectSpec",
    "MeshCheck",
    "ObjectExpect",
    "PoolSettings",
    "ReferenceImage",
    "RenderSpec",
    "reap_containers",
]
