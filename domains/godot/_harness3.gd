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

func _initialize():
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
	_main(tokens[0], tokens[1], job)


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
			node.filename = ""
			node.owner = root
		for child in node.get_children():
			stack.push_back(child)
	var packed = PackedScene.new()
	if packed.pack(root) != OK:
		return null
	return packed


func _main(token_a, token_b, job):
	var report = {"token": token_a, "parse": {}, "scene": "ok"}
	for path in job["scripts"]:
		var script = load(path)
		report["parse"][path] = script != null and script is GDScript and script.can_instance()
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
	while problem == "" and done < frames:
		yield(self, "idle_frame")
		var now = Engine.get_idle_frames()
		if now <= last:
			problem = "resumed"  # the model resumed this coroutine itself, mid-frame
		elif not is_instance_valid(root):
			problem = "freed"
		else:
			done += 1
		last = now
	if problem == "" and not is_instance_valid(root):
		problem = "freed"
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
	# Token B only when every frame ran: a thread of the model that outlives its nodes can
	# read and rewrite this file, so it must hold nothing but the proof itself.
	if problem == "" and done == frames:
		_write("res://_report_b.json", to_json({"token": token_b}))
	else:
		_write("res://_report_b.json", to_json({"problem": problem, "frames": done}))
	quit()
