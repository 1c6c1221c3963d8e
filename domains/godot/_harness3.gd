extends SceneTree
# The trusted harness of game.godot for Godot 3.x (see _engine.py for why it looks like this).
#
# It is the engine's main loop (`-s res://_harness.gd`), so it starts before any script of
# the model is loaded. It reads the two per-job tokens and deletes their file before any
# model code can run, and keeps them only as locals of the `_main` coroutine (a
# GDScriptFunctionState: no API reads another function's locals). Report A (parse, load,
# instance) carries token A and is written before the model's frames run; the model's code
# can read it, so token A proves nothing about the frames. Report B (frames done, states saved)
# carries token B, which nothing the model can reach ever held. The states are packed into
# memory and saved only at the end, after every node under the root was freed.
# Nothing here is a verdict: the host parses the saved text scenes itself.
#
# Every call the harness makes on an object goes to a script attached to that object first
# (Object::call, Object::get): _audit() checks, each frame before anything is read, that no
# live script (a file, a built-in script of a scene, or one made at run time) can answer an
# engine method of an object it is attached to, and that no thread of the model can race
# the reads. The harness reads only through methods (never properties) of audited objects.
#
# The same file is the fork server's main loop (docs/godot.md, "The fork server"): started
# with GODOT_FORK_OUT set (only _forkdrive.py sets it; a fresh engine's job never does), it
# serves before anything above happens (_serve), and each forked, jailed child goes on here
# exactly as a fresh engine does. One script, not a server script that extends this one: the
# audit re-lists every live script's methods each frame, and a second script of the
# harness's own doubled that work in every forked child (~45 us a frame, measured).

var _native = null
var _child = false
var _baseline = null
# The server's audit of its own objects (see _serve), taken over by a child's _main.


func _initialize():
	if OS.get_environment("GODOT_FORK_OUT") != "" and not _serve():
		return  # the server's end: it never runs a frame
	# Taken into a local, and the member cleared, before any model file is read: the model's
	# code can reach this object's members (get), never a function's locals.
	var audit = {"top": 0, "scripts": [], "verdicts": {}}
	if typeof(_baseline) == TYPE_DICTIONARY:
		audit = _baseline
	_baseline = null
	var tokens = ["", ""]
	var file = File.new()
	if file.open("res://_token", File.READ) == OK:
		tokens = file.get_as_text().strip_edges().split(" ")
		file.close()
	Directory.new().remove("res://_token")
	var job = {}
	if file.open("res://_job.json", File.READ) == OK:
		var parsed = JSON.parse(file.get_as_text())
		file.close()
		if parsed.error == OK and typeof(parsed.result) == TYPE_DICTIONARY:
			job = parsed.result
	if tokens.size() != 2 or job.empty():
		print("harness: no job")
		quit()
		return
	_main(tokens[0], tokens[1], job, audit)


func _write(path, text):
	var file = File.new()
	if file.open(path, File.WRITE) == OK:
		file.store_string(text)
		file.close()


func _pack(root, max_nodes):
	# Every descendant is made part of the saved scene (runtime-added nodes and the insides
	# of instanced sub-scenes too); iterative, bounded by max_nodes.
	var stack = [root]
	var count = 0
	while not stack.empty():
		var node = stack.pop_back()
		count += 1
		if count > max_nodes:
			return null
		if node != root:
			node.set_filename("")
			node.set_owner(root)
		for child in node.get_children():
			stack.push_back(child)
	var packed = PackedScene.new()
	if packed.pack(root) != OK:
		return null
	return packed


func _shadowed(script):
	# A model script that overrides an engine method (or _get/_set) could answer the
	# harness's own calls (positions, velocities, shapes) with made-up values: not allowed.
	var base = script.get_instance_base_type()
	for method in script.get_script_method_list():
		var name = method["name"]
		if name in ["_get", "_set", "_get_property_list"] or ClassDB.class_has_method(base, name):
			return name
	return ""

const _HOOKS = ["_get", "_set", "_get_property_list"]


func _audit(audit):
	# "" when no live script can answer an engine method of an object it is attached to;
	# else the reason (the run then fails closed). Sound without calling anything a script
	# could answer first: ids are sequential and never reused (Godot 3 ObjectDB), `is` and
	# instance_from_id are engine-side, and calls are made only on objects proven bare.
	var top = weakref(self).get_instance_id()  # a fresh object: the newest id
	for i in range(audit["top"] + 1, top):
		var o = instance_from_id(i)
		if o == null:
			continue
		if o is Thread:
			return "the scene made a Thread (a thread could race the harness's reads)"
		if o is Script:
			if not (o is GDScript):
				return "the scene made a script that is not GDScript"
			audit["scripts"].append(o)
	audit["top"] = top
	var scripts = audit["scripts"]
	for t in scripts:
		if ClassDB is t:
			return "a script is attached to ClassDB"
		for s in scripts:
			if s is t:
				return "a script is attached to a script"
	var loose = []
	for s in scripts:
		var names = []
		for m in s.get_script_method_list():
			names.append(m["name"])
		var base = s.get_instance_base_type()
		var key = base + ":" + PoolStringArray(names).join(",")
		if not audit["verdicts"].has(key):
			audit["verdicts"][key] = _judge(base, names)
		var verdict = audit["verdicts"][key]
		if verdict[0] != "":
			return verdict[0]
		if not verdict[1].empty():
			loose.append([s, verdict[1]])
	if loose.empty():
		return ""
	# A script whose methods are named like methods of a class derived from its base is
	# harmless unless it is attached to an object of such a class: find where it is.
	for i in range(1, top):
		var o = instance_from_id(i)
		if o == null:
			continue
		for pair in loose:
			if o is pair[0]:
				var cls = o.get_class()  # no script of o overrides Object methods (_judge)
				for name in pair[1]:
					if ClassDB.class_has_method(cls, name):
						return "a script overrides the engine method %s of %s" % [name, cls]
	return ""


func _judge(base, names):
	# [reason if a method overrides one of the base class (or Object, or a property hook),
	#  names that some class derived from the base has]
	var loose = []
	for name in names:
		if name in _HOOKS or ClassDB.class_has_method(base, name) or ClassDB.class_has_method("Object", name):
			return ["a script overrides the engine method %s of %s" % [name, base], []]
	for cls in ClassDB.get_inheriters_from_class(base):
		for name in names:
			if not (name in loose) and ClassDB.class_has_method(cls, name, true):
				loose.append(name)
	return ["", loose]


func _watch(root, contact, state, frame, dt):
	# Per frame, for one contact probe: did the node touch the other one yet, and did the
	# node (a rigid body) ever jump further than its velocity explains (moved by a script)?
	if state["frame"] >= 0:
		return
	var a = root.get_node_or_null(contact[0])
	var b = root.get_node_or_null(contact[1])
	if a == null or b == null:
		return
	if a is RigidBody or a is RigidBody2D:
		state["rigid"] = true
		var pos = a.get_global_transform().origin if a is RigidBody else a.get_global_position()
		var step = a.get_linear_velocity() * dt
		if state["pos"] != null and state["jump"] < 0:
			var off = (pos - state["pos"] - step).length()
			# Free flight integrates exactly (measured: 0 off); contacts with other bodies
			# correct positions a little. A jump, or slow creep that adds up, is a script.
			state["drift"] += off
			if off > 0.002 + 0.1 * step.length() or state["drift"] > 0.05:
				state["jump"] = frame
				state["size"] = max(off, state["drift"])
		state["pos"] = pos
	if _touching(a, b):
		state["frame"] = frame


func _touching(a, b):
	# The physics space itself, asked with a's own shapes: contact monitoring, signals and
	# anything else the model's scripts can switch off or emit are not consulted.
	var space = null
	var query = null
	if a is CollisionObject and b is CollisionObject:
		space = a.get_world().get_direct_space_state()
		query = PhysicsShapeQueryParameters.new()
		query.collision_mask = 0xFFFFF
		query.margin = 0.04
	elif a is CollisionObject2D and b is CollisionObject2D:
		space = a.get_world_2d().get_direct_space_state()
		query = Physics2DShapeQueryParameters.new()
		query.collision_layer = 0xFFFFF
		query.margin = 0.5
	else:
		return false
	query.exclude = [a.get_rid()]
	for owner in a.get_shape_owners():
		var xf = a.get_global_transform() * a.shape_owner_get_transform(owner)
		for j in range(a.shape_owner_get_shape_count(owner)):
			query.set_shape(a.shape_owner_get_shape(owner, j))
			query.transform = xf
			for hit in space.intersect_shape(query, 32):
				if hit["collider"] == b:
					return true
	return false


func _main(token_a, token_b, job, audit):
	var report = {"token": token_a, "parse": {}, "scene": "ok", "shadows": {}}
	for path in job["scripts"]:
		var script = load(path)
		report["parse"][path] = script != null and script is GDScript and script.can_instance()
		if report["parse"][path]:
			var shadow = _shadowed(script)
			if shadow != "":
				report["parse"][path] = false
				report["shadows"][path] = shadow
	var packed = load(job["scene"])
	var root = null
	if packed == null or not (packed is PackedScene):
		report["scene"] = "load"
	elif not packed.can_instance():
		report["scene"] = "instance"
	else:
		root = packed.instance()
		if root == null:
			report["scene"] = "instance"
	_write("res://_report_a.json", to_json(report))
	if root == null:
		quit()
		return
	get_root().add_child(root)
	var max_nodes = int(job["max_nodes"])
	var start = _pack(root, max_nodes) if is_instance_valid(root) else null
	var done = 0
	var frames = int(job["frames"])
	var problem = ""
	if start == null:
		problem = "start"
	var last = -1
	var dt = 1.0 / float(job["fps"])
	var contacts = job["contacts"]
	var seen = []
	for c in contacts:
		seen.append({"frame": -1, "jump": -1, "size": 0.0, "drift": 0.0, "rigid": false, "pos": null})
	var why = ""
	while problem == "" and done < frames:
		yield(self, "idle_frame")
		why = _audit(audit)
		if why != "":
			problem = "audit"
			break
		var now = Engine.get_idle_frames()
		if now <= last:
			problem = "resumed"  # the model resumed this coroutine itself, mid-frame
		elif not is_instance_valid(root):
			problem = "freed"
		else:
			done += 1
			for i in range(contacts.size()):
				_watch(root, contacts[i], seen[i], done, dt)
		last = now
	if problem == "" and not is_instance_valid(root):
		problem = "freed"
	if problem == "audit":
		# nothing of this run is judged: stop before touching the model's nodes again (a
		# thread of the model may hold them locked: freeing one would abort this function)
		_write("res://_report_b.json", to_json({"problem": problem, "frames": done, "why": why}))
		quit()
		return
	var end = null
	if problem == "":
		end = _pack(root, max_nodes)
		if end == null:
			problem = "end"
	for child in get_root().get_children():
		get_root().remove_child(child)
		child.free()
	if start != null:
		ResourceSaver.save("res://_state0.tscn", start)
	if end != null:
		ResourceSaver.save("res://_state1.tscn", end)
	# Report B only when every frame ran, and without token B itself: a thread of the model
	# that outlives its nodes can read and rewrite this file, so the payload is bound to
	# token B by a keyed hash the host recomputes (a nested sha256: no length extension).
	if problem == "" and done == frames:
		var found = []
		for state in seen:
			found.append({"frame": state["frame"], "jump": state["jump"], "size": state["size"], "rigid": state["rigid"]})
		var payload = to_json({"frames": done, "contacts": found})
		var proof = (token_b + (token_b + payload).sha256_text()).sha256_text()
		_write("res://_report_b.json", to_json({"payload": payload, "proof": proof}))
	else:
		_write("res://_report_b.json", to_json({"problem": problem, "frames": done, "why": why}))
	quit()


# -- the fork server (sandbox/images/godot/forkserver.c) ------------------------------------
#
# The engine starts once: classes, servers, the default theme and this script, before any
# model file exists. _serve then reads a job number from stdin (the driver, _forkdrive.py),
# forks, and waits. The parent never returns from it, so it never runs a frame, never loads
# a model file and never runs model code. The child jails itself (vf_enter: own session, the
# job's stdout and stderr, no other fd, Landlock and seccomp as a fresh engine's _jail.py; it
# also seals the library: no more fork in a child) and only then returns true: _initialize
# goes on as in a fresh engine. When the engine's main loop ends, the child exits at
# _finalize with the engine's exit code, skipping the engine's teardown (~30 ms of CPU that
# frees what the process drops anyway). The library stays loaded in the child: it has no
# libc dependency, so its handle reaches nothing but its own sealed procedures (see
# forkserver.c), and its folder is unreadable in the jail.
#
# The audio driver's thread is the one server thread that takes a lock on its own: the fork
# happens with that lock held by this thread (AudioServer.lock), so no child starts with a
# lock whose owner does not exist in it.

func _serve():
	# true in a jailed child (the harness goes on); false in the server, at its end
	var native = GDNative.new()
	native.library = load("res://_vfork.gdnlib")
	if not native.initialize():
		printerr("forkserver: the fork library does not load")
		quit()
		return false
	var work = ProjectSettings.globalize_path("res://").trim_suffix("/")
	var out = OS.get_environment("GODOT_FORK_OUT")
	var memory_mb = int(OS.get_environment("GODOT_FORK_MEMORY_MB"))
	# The audit's first pass in every child would visit each object the engine made at its
	# start (~1500 ids) and judge the harness's script: the same answer each time, as no
	# model file exists yet, so it is taken once here and a child's audit goes on from it
	# (ids are sequential and never reused: the child still visits everything made later).
	# A reason here (a Thread or a foreign script at start) leaves each child its own pass,
	# which then fails the check as a fresh engine would.
	var baseline = {"top": 0, "scripts": [], "verdicts": {}}
	if _audit(baseline) == "":
		_baseline = baseline
	print("forkserver: ready threads=%d" % native.call_native("standard_varcall", "vf_threads", []))
	while true:
		var job = native.call_native("standard_varcall", "vf_next", [])
		if job < 0:
			quit()
			return false
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
			return true
		print("forkserver: child %d %d" % [job, pid])
		var status = -1
		if pid > 0:
			status = native.call_native("standard_varcall", "vf_wait", [pid])
		var cpu = native.call_native("standard_varcall", "vf_cpu_us", [])
		print("forkserver: done %d %d %d" % [job, status, cpu])


func _finalize():
	if _child and _native is GDNative:
		_native.call_native("standard_varcall", "vf_exit", [OS.exit_code])
