extends "res://_harness.gd"
# The fork server of game.godot for Godot 3.x (see sandbox/images/godot/forkserver.c).
#
# The engine starts once (`-s res://_forkserver.gd`): classes, servers, the default theme and
# this script with the harness it extends, before any model file exists. _initialize then
# serves: it reads a job number from stdin (the driver, _forkdrive.py), forks, and waits. The
# parent never leaves _initialize, so it never runs a frame, never loads a model file and
# never runs model code. The child jails itself (vf_enter: own session, the job's stdout and
# stderr, no other fd, Landlock and seccomp as a fresh engine's _jail.py; it also seals the
# library: no more fork in a child) and only then runs the harness's own _initialize: the
# job runs exactly as in a fresh engine. When the engine's main loop ends, the child exits
# at _finalize with the engine's exit code, skipping the engine's teardown (~30 ms of CPU
# that frees what the process drops anyway). The library stays loaded in the child: it has
# no libc dependency, so its handle reaches nothing but its own sealed procedures (see
# forkserver.c), and its folder is unreadable in the jail.
#
# The audio driver's thread is the one server thread that takes a lock on its own: the fork
# happens with that lock held by this thread (AudioServer.lock), so no child starts with a
# lock whose owner does not exist in it.

var _native = null
var _child = false


func _initialize():
	var native = GDNative.new()
	native.library = load("res://_vfork.gdnlib")
	if not native.initialize():
		printerr("forkserver: the fork library does not load")
		quit()
		return
	var work = ProjectSettings.globalize_path("res://").trim_suffix("/")
	var out = OS.get_environment("GODOT_FORK_OUT")
	var memory_mb = int(OS.get_environment("GODOT_FORK_MEMORY_MB"))
	print("forkserver: ready threads=%d" % native.call_native("standard_varcall", "vf_threads", []))
	while true:
		var job = native.call_native("standard_varcall", "vf_next", [])
		if job < 0:
			quit()
			return
		AudioServer.lock()
		var pid = native.call_native("standard_varcall", "vf_fork", [])
		AudioServer.unlock()
		if pid == 0:
			var where = "%s/%d" % [out, job]
			native.call_native(
				"standard_varcall",
				"vf_enter",
				[work, OS.get_executable_path(), where + ".out", where + ".err", memory_mb]
			)
			_native = native
			_child = true
			._initialize()
			return
		print("forkserver: child %d %d" % [job, pid])
		var status = -1
		if pid > 0:
			status = native.call_native("standard_varcall", "vf_wait", [pid])
		var cpu = native.call_native("standard_varcall", "vf_cpu_us", [])
		print("forkserver: done %d %d %d" % [job, status, cpu])


func _finalize():
	if _child and _native is GDNative:
		_native.call_native("standard_varcall", "vf_exit", [OS.exit_code])
