"""The completion format of ``game.godot``: a project fragment as fenced blocks, one per file.

Each file is a fenced block whose first line names it in the file's own comment syntax::

    ```gdscript
    # file: player.gd
    extends KinematicBody
    ...
    ```

    ```tscn
    ; file: main.tscn
    [gd_scene format=2]
    ...
    ```

A completion with no named block but exactly one GDScript block is a *builder script*: it is
``main.gd``, and when the spec's scene is not among the files the verifier generates it as a
scene whose root node is the class the script ``extends`` (``Node`` when it extends a script
path), with the script attached, so ``_ready`` builds the scene.

Names are project-relative (``res://`` is stripped), use ``[A-Za-z0-9_./-]``, end in ``.gd``
or ``.tscn``, never contain ``..`` and never start with ``_`` (the harness's files do) or name
``project.godot``: a file map that breaks these rules is the model's ``fail``, with the rule in
the feedback.
"""

from __future__ import annotations

import re

from verifiers.text import _fenced_blocks

__all__ = ["FileMapError", "builder_scene", "project_files"]

_MARK = re.compile(r"^[ \t]*(?:#|;|//)[ \t]*file:[ \t]*(\S+)[ \t]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./-]*\.(?:gd|tscn)$")
_EXTENDS = re.compile(r"^extends[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:#.*)?$", re.M)
_TAGS = {"", "gdscript", "gd", "godot", "tscn", "ini", "text"}


class FileMapError(ValueError):
    """The completion's files break a rule (the message names the file and the rule)."""


def project_files(text: str, *, max_files: int, max_bytes: int) -> dict[str, str]:
    """``name -> content`` of every file the completion declares.

    Raises:
        FileMapError: no file at all, a bad or repeated name, too many or too large files.
    """
    files: dict[str, str] = {}
    unnamed: list[str] = []
    for tag, body in _fenced_blocks(text):
        if tag not in _TAGS:
            continue
        first, _, rest = body.partition("\n")
        mark = _MARK.match(first)
        if mark is None:
            if tag in ("", "gdscript", "gd"):
                unnamed.append(body)
            continue
        name = mark.group(1).removeprefix("res://")
        if not _NAME.match(name) or ".." in name.split("/") or "//" in name:
            raise FileMapError(
                f"file name {name[:80]!r} is not allowed: use a project-relative path of "
                "[A-Za-z0-9_./-] ending in .gd or .tscn (no '..', no leading '_')"
            )
        if name in files:
            raise FileMapError(f"file {name!r} is declared twice")
        files[name] = rest
    if not files and len(unnamed) == 1:
        files["main.gd"] = unnamed[0]
    if not files:
        raise FileMapError(
            "no project files in the completion: write each file as a fenced block whose "
            "first line is '# file: <name>.gd' or '; file: <name>.tscn'"
        )
    if len(files) > max_files:
        raise FileMapError(f"{len(files)} files, more than the {max_files} allowed")
    for name, content in files.items():
        size = len(content.encode("utf-8"))
        if size > max_bytes:
            raise FileMapError(f"file {name!r} is {size} bytes, more than {max_bytes}")
    return files


def builder_scene(script: str, *, script_name: str = "main.gd") -> str:
    """A one-node scene that runs ``script`` (its root is the native class it extends)."""
    match = _EXTENDS.search(script)
    root = match.group(1) if match else "Node"
    return (
        "[gd_scene load_steps=2 format=2]\n\n"
        f'[ext_resource path="res://{script_name}" type="Script" id=1]\n\n'
        f'[node name="Main" type="{root}"]\n'
        "script = ExtResource( 1 )\n"
    )
