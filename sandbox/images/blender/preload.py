"""Zygote preload of the ``blender`` runtime: import bpy and walk render.blender's path once.

Runs in the sandbox runner's zygote before any job exists (see ``_runner._run_preload``), so
every job of this runtime is a fork of a Blender that is already imported (~0.7 s saved) and
has already done, once, every first-time step of the render judge's path: a Cycles render with
the judge's colour settings (Standard view transform, sRGB display: their OpenColorIO
processors are built on first use), a PNG written through ``save_render`` (the image writer and
its colour conversion), a ``.blend`` saved and opened again (the script phase saves one, the
judge opens it), a packed-image pass, an evaluated mesh and a camera ray cast (the judge's
inspection). Each of those costs a fresh process milliseconds of CPU the first time only;
warmed here, a fork inherits it (measured in docs/benchmarks/render.md: ~20 ms of CPU per
scene). It leaves an empty scene behind (and of the GUI's layouts only the default one, see
the end) and deletes the files it wrote.
Trusted code from the runtime definition; it never sees job data.
"""

import os
import shutil
import tempfile

import bpy
import numpy  # the judge's inspection uses it

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_cube_add()
bpy.ops.object.camera_add(location=(4.0, -4.0, 3.0), rotation=(1.1, 0.0, 0.8))
bpy.context.scene.camera = bpy.context.object
bpy.ops.object.light_add(type="SUN")
_scene = bpy.context.scene
_scene.render.engine = "CYCLES"
_scene.cycles.device = "CPU"
_scene.cycles.samples = 1
_scene.cycles.use_denoising = False
_scene.cycles.use_adaptive_sampling = False
_scene.render.resolution_x = 8
_scene.render.resolution_y = 8
_scene.render.resolution_percentage = 100
_scene.render.use_compositing = False
_scene.render.use_sequencer = False
_scene.render.threads_mode = "FIXED"
_scene.render.threads = 1
_scene.display_settings.display_device = "sRGB"
_scene.view_settings.view_transform = "Standard"
_scene.view_settings.look = "None"
_scene.render.image_settings.file_format = "PNG"
_scene.render.image_settings.color_mode = "RGB"
_scene.render.image_settings.color_depth = "8"
_depsgraph = bpy.context.evaluated_depsgraph_get()
_cube = bpy.data.objects["Cube"].evaluated_get(_depsgraph)
_mesh = _cube.to_mesh()
_mesh.calc_loop_triangles()
_co = numpy.empty(len(_mesh.vertices) * 3, dtype=numpy.float64)
_mesh.vertices.foreach_get("co", _co)
_cube.to_mesh_clear()
_scene.ray_cast(_depsgraph, _scene.camera.location, (-1.0, 1.0, -0.7))
bpy.ops.render.render(write_still=False)
_folder = tempfile.mkdtemp(prefix="verifiers-preload-")
try:
    bpy.data.images["Render Result"].save_render(
        filepath=os.path.join(_folder, "warm.png"), scene=_scene
    )
    bpy.ops.file.pack_all()
    _blend = os.path.join(_folder, "warm.blend")
    bpy.ops.wm.save_as_mainfile(filepath=_blend, copy=True, compress=False)
    bpy.ops.wm.open_mainfile(filepath=_blend, load_ui=False, use_scripts=False)
finally:
    shutil.rmtree(_folder, ignore_errors=True)
bpy.ops.wm.read_factory_settings(use_empty=True)
# The factory startup holds the GUI's eleven workspace layouts and their screens (~400 KB of
# the ~550 KB every saved scene was). Headless, no window shows them; but every script job
# wrote them into its scene.blend and every judge job freed them (copy-on-write faults in a
# fork) and read them back. Only "Layout", the default one, stays, so what a script can
# reach headless is unchanged (the window manager, one screen with a 3D view to configure).
_layout = "Layout"
bpy.data.batch_remove(
    [
        *(w for w in bpy.data.workspaces if w.name != _layout),
        *(s for s in bpy.data.screens if s.name != _layout),
    ]
)
