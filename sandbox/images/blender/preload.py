"""Zygote preload of the ``blender`` runtime: import bpy and warm Cycles up, once per runner.

Runs in the sandbox runner's zygote before any job exists (see ``_runner._run_preload``), so
every job of this runtime is a fork of a Blender that is already imported (~0.7 s saved) and
has rendered once (Cycles' one-time setup, ~0.1 s saved). It leaves an empty scene behind.
Trusted code from the runtime definition; it never sees job data.
"""

import bpy
import numpy  # noqa: F401  (the judge's inspection uses it)

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_cube_add()
bpy.ops.object.camera_add(location=(4.0, -4.0, 3.0), rotation=(1.1, 0.0, 0.8))
bpy.context.scene.camera = bpy.context.object
bpy.ops.object.light_add(type="SUN")
_scene = bpy.context.scene
_scene.render.engine = "CYCLES"
_scene.cycles.device = "CPU"
_scene.cycles.samples = 1
_scene.render.resolution_x = 8
_scene.render.resolution_y = 8
_scene.render.resolution_percentage = 100
_scene.render.threads_mode = "FIXED"
_scene.render.threads = 1
bpy.ops.render.render(write_still=False)
bpy.ops.wm.read_factory_settings(use_empty=True)
