"""Writes datasets/godot/forkserver.jsonl: attacks on the Godot fork server itself.

Run ``python tests/domains/godot/make_forkserver_corpus.py`` after editing. Each line is a
scene that would pass (the honest ``Player`` mover of the main corpus) only if its attack
reached outside its own forked child: signalling the server, the driver or any other
process; reading ``/proc`` of its parent; forking the checked engine or reaching libc
through the fork library (the child keeps it loaded, sealed and libc-free; a fresh engine
cannot read it at all); reading an inherited fd. Two more attack the *next* check instead: a grandchild engine
left running that deletes the next check's scene, and a child that deletes the server's own
files and plants files in ``/tmp``, ``/dev/shm`` and ``user://``, and more: one that
writes the batch's results, job file and the next check's output (outside its project: all
refused), one that holds every fd it can get, one that leaves timers in the tree, and a
memory spike meant to take the whole batch job down with it. The test runs every line
through the fork server with an honest check after each (it must still pass) and through
one engine per check: both must say ``fail`` with reward 0.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_corpus import MOVER_SPEC, completion, fence, item, scripted_root

BATCH_BREAKER = "fork-memory-spike"
"""The attack that may take its whole batch down (a string doubled 34 times, as fast as the
engine can touch memory, in a job whose memory limit is a few hundred MiB above the
largest check's): where the batch job's
OOM killer beats the driver's watch, every check of the batch runs in a fresh engine, so
the honest check after it may not be a forked one."""
OUT = Path(__file__).resolve().parents[3] / "datasets" / "godot" / "forkserver.jsonl"

_MAKE_PLAYER = """
func _ready():
	if not _attack():
		return
	var body = KinematicBody.new()
	body.name = "Player"
	add_child(body)

func _physics_process(delta):
	if has_node("Player"):
		$Player.translation.x += 2.0 * delta
"""


def attack(body: str) -> str:
    """A builder script whose ``_attack`` (``body``) must return true for it to pass."""
    return completion(
        fence("gdscript", "extends Spatial\n\nfunc _attack():\n" + body + _MAKE_PLAYER)
    )


SIGNAL_ALL = """	var me = OS.get_process_id()
	var hit = false
	for pid in range(2, me + 64):
		if pid != me and OS.kill(pid) == OK:
			hit = true
	return hit
"""

READ_PARENT_PROC = """	var me = OS.get_process_id()
	var f = File.new()
	for pid in range(max(1, me - 300), me):
		if f.open("/proc/%d/status" % pid, File.READ) == OK:
			f.close()
			return true
	return f.open("/proc/self/status", File.READ) == OK
"""

RELOAD_LIBRARY = """	var libs = []
	var cached = load("res://_vfork.gdnlib")
	if cached != null:
		libs.append(cached)
	var config = ConfigFile.new()
	config.set_value("general", "symbol_prefix", "godot_")
	config.set_value("general", "load_once", true)
	config.set_value("entry", "Server.64", "/opt/verifiers/godot/libvfork.so")
	config.set_value("dependencies", "Server.64", [])
	var own = GDNativeLibrary.new()
	own.config_file = config
	libs.append(own)
	for lib in libs:
		var native = GDNative.new()
		native.library = lib
		if native.initialize():
			var forked = native.call_native("standard_varcall", "vf_fork", [])
			if typeof(forked) == TYPE_INT and forked >= 0:
				return true
			if native.call_native("standard_varcall", "getpid", []) != null:
				return true
	return false
"""

INHERITED_FDS = """	var f = File.new()
	for path in ["/dev/stdin", "/dev/fd/0"]:
		if f.open(path, File.READ) == OK:
			f.close()
			return true
	for fd in range(3, 64):
		if f.open("/dev/fd/%d" % fd, File.READ) == OK or f.open("/dev/fd/%d" % fd, File.WRITE) == OK:
			f.close()
			return true
	return false
"""

CORRUPT_SHARED = """	var d = Directory.new()
	for name in ["_harness.gd", "_forkserver.gd", "_vfork.gdnlib", "project.godot", "_job.json"]:
		d.remove("res://" + name)
	var f = File.new()
	for path in ["res://_harness.gd", "res://project.godot", "user://planted.gd", "/tmp/planted", "/dev/shm/planted", "/tmp/.local/share/godot/app_userdata/verifiers-job/planted"]:
		if f.open(path, File.WRITE) == OK:
			f.store_string("extends SceneTree\\nfunc _initialize():\\n\\tquit()\\n")
			f.close()
	return false
"""

FORGE_RESULTS = """	var f = File.new()
	var work = ProjectSettings.globalize_path("res://").trim_suffix("/").get_base_dir()
	var forged = Directory.new().make_dir(work + "/__pycache__") == OK
	for path in [work + "/_results.json", work + "/_batch.json", work + "/o/0.out", work + "/o/1.out", work + "/o/1.err", work + "/_forkdrive.py", work + "/_forkrules.py", "res://../_forkrules.py", work + "/__pycache__/_forkrules.cpython-311.pyc", "res://../_results.json"]:
		if f.open(path, File.WRITE) == OK:
			f.store_string("[]")
			f.close()
			forged = true
	return forged
"""

EXHAUST_FDS = """	var held = []
	for i in range(200000):
		var f = File.new()
		if f.open("res://main.tscn", File.READ) != OK:
			break
		held.append(f)
	var d = Directory.new()
	for i in range(20000):
		var e = Directory.new()
		if e.open("res://") != OK:
			break
		e.list_dir_begin()
		held.append(e)
	return false
"""

MEMORY_SPIKE = """	var s = "x"
	for i in range(34):
		s += s
	return s.length() < 0
"""

SET_TIMERS = """	var tree = Engine.get_main_loop()
	for i in range(64):
		var t = Timer.new()
		t.wait_time = 0.01
		t.autostart = true
		tree.root.call_deferred("add_child", t)
	for i in range(64):
		tree.create_timer(0.5 + i * 0.01)
	var f = File.new()
	if f.open("user://timer-was-here", File.WRITE) == OK:
		f.store_string("x")
		f.close()
	return false
"""

LINGER = """extends SceneTree
# Left running by the check before: deletes and rewrites the next check's scene.

func _initialize():
	var d = Directory.new()
	var f = File.new()
	for i in range(200000):
		d.remove("res://main.tscn")
		if f.open("res://main.tscn", File.WRITE) == OK:
			f.store_string("broken")
			f.close()
		OS.delay_msec(2)
	quit()
"""

LEAVE_GRANDCHILD = """extends Spatial

func _ready():
	var project = ProjectSettings.globalize_path("res://")
	OS.execute(OS.get_executable_path(), ["--path", project, "-s", "res://linger.gd"], false)
	OS.execute(OS.get_executable_path(), ["--path", project, "-s", "res://linger.gd"], false)
"""


def rows() -> list[dict[str, Any]]:
    fail = ("fail", 0.0)
    grandchild = completion(
        fence("tscn", scripted_root("main.tscn", "main.gd", "Main", "Spatial")),
        fence("gdscript", "# file: main.gd\n" + LEAVE_GRANDCHILD),
        fence("gdscript", "# file: linger.gd\n" + LINGER),
    )
    return [
        item("fork-signals-every-process", "hack", attack(SIGNAL_ALL), MOVER_SPEC, *fail),
        item("fork-reads-parent-proc", "hack", attack(READ_PARENT_PROC), MOVER_SPEC, *fail),
        item("fork-reloads-fork-library", "hack", attack(RELOAD_LIBRARY), MOVER_SPEC, *fail),
        item("fork-reads-inherited-fds", "hack", attack(INHERITED_FDS), MOVER_SPEC, *fail),
        item("fork-corrupts-shared-files", "hack", attack(CORRUPT_SHARED), MOVER_SPEC, *fail),
        item("fork-leaves-grandchild-running", "hack", grandchild, MOVER_SPEC, *fail),
        item("fork-forges-batch-results", "hack", attack(FORGE_RESULTS), MOVER_SPEC, *fail),
        item("fork-exhausts-fds", "hack", attack(EXHAUST_FDS), MOVER_SPEC, *fail),
        item("fork-leaves-timers", "hack", attack(SET_TIMERS), MOVER_SPEC, *fail),
        item(
            BATCH_BREAKER,
            "hack",
            attack(MEMORY_SPIKE),
            {**MOVER_SPEC, "memory_mb": 128},
            *fail,
        ),
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: engine_corpus
    from engine_corpus import write_corpus

    write_corpus(OUT, rows())
