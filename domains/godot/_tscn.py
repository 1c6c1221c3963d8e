"""A trusted reader of Godot's text scene format (``.tscn``): nodes, their transforms, and
persisted signal connections, with world positions composed along the parent chain.

Why a reader of our own and not the engine: the scene states come from an engine process in
which the model's scripts ran, so no engine-side report of them can be trusted. The harness
saves the states as text scenes; this module (host side, no engine, no ``eval``) reads only the
fields the checks need: numbers, vectors, transforms and booleans, each parsed with a regular
expression and ``float``. Anything else (strings, resources, arrays) is skipped. One pass over
the text, linear in its size; multi-line values (strings with newlines, arrays) are tracked by
quote and bracket state so their contents never read as headers or properties.

A state is the model's own world, however it was made: the reader's job is to measure it
faithfully, not to trust it (see docs/godot.md, "What is trusted").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ._engine import ENGINE, Engine

__all__ = ["NodeState", "SceneState", "TscnError", "parse_tscn"]

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
_CALL = re.compile(r"^(Transform|Vector3|Vector2)\(\s*(.*?)\s*\)$", re.S)
_SCALAR = re.compile(rf"^(?:{_NUM})$")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_/:]*)\s*=\s*")
_ARITY = {"Transform": 12, "Vector3": 3, "Vector2": 2}
_WANTED = {
    "transform",
    "position",
    "rotation",
    "rotation_degrees",
    "scale",
    "linear_velocity",
    "angular_velocity",
    "sleeping",
    "mode",
    "visible",
    "disabled",
}
"""Properties the checks read; every other property is skipped unparsed."""


class TscnError(ValueError):
    """The text is not a scene this reader can measure (the message says why)."""


@dataclass
class NodeState:
    """One node as saved: its path from the scene root (``.`` is the root), class and the
    properties the checks read."""

    path: str
    name: str
    type: str
    parent: str | None
    props: dict[str, Any] = field(default_factory=dict)
    dimension: int = 0
    """3: a 3D node, 2: a 2D canvas node, 0: neither."""
    position: tuple[float, ...] | None = None
    """World position (composed along the parent chain), None for non-spatial nodes."""


@dataclass
class SceneState:
    """A parsed text scene."""

    nodes: dict[str, NodeState]
    connections: list[dict[str, str]]


def _value(raw: str) -> Any:
    text = raw.strip()
    if text in ("true", "false"):
        return text == "true"
    if _SCALAR.match(text):
        return float(text)
    call = _CALL.match(text)
    if call is not None:
        parts = [p.strip() for p in call.group(2).split(",")]
        if len(parts) != _ARITY[call.group(1)] or not all(_SCALAR.match(p) for p in parts):
            return None
        return [float(p) for p in parts]
    return None


def _attrs(header: str) -> dict[str, str]:
    """``key="quoted"`` and ``key=bare`` pairs of a ``[section ...]`` header."""
    out: dict[str, str] = {}
    i, n = 0, len(header)
    while i < n:
        match = re.compile(r"\s*([A-Za-z_]+)=").match(header, i)
        if match is None:
            break
        key, i = match.group(1), match.end()
        if i < n and header[i] == '"':
            j, buf = i + 1, []
            while j < n and header[j] != '"':
                if header[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(header[j])
                j += 1
            out[key] = "".join(buf)
            i = j + 1
        else:
            depth, j = 0, i
            while j < n and not (depth == 0 and header[j] == " "):
                depth += header[j] in "([{"
                depth -= header[j] in ")]}"
                j += 1
            out[key] = header[i:j]
            i = j
    return out


def _statements(text: str) -> list[tuple[str, str]]:
    """``("header", body)`` and ``("prop", "key = value")`` in order; a value continues
    over lines while a string or bracket is open."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        end = text.find("\n", i)
        end = n if end < 0 else end
        line = text[i:end].strip()
        if not line or line.startswith(";"):
            i = end + 1
            continue
        if line.startswith("["):
            close = line.rfind("]")
            out.append(("header", line[1 : close if close > 0 else len(line)]))
            i = end + 1
            continue
        # a property: scan on from its start until quotes and brackets balance at a newline
        j, depth, quoted = i, 0, False
        while j < n:
            c = text[j]
            if quoted:
                if c == "\\":
                    j += 1
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == "\n" and depth <= 0:
                break
            j += 1
        out.append(("prop", text[i:j].strip()))
        i = j + 1
    return out


def parse_tscn(text: str, *, max_nodes: int, engine: Engine = ENGINE) -> SceneState:
    """Nodes and connections of a text scene, with world positions.

    Raises:
        TscnError: not a text scene, more than ``max_nodes`` nodes, or a node whose parent
            is not declared before it.
    """
    if not text.lstrip().startswith("[gd_scene"):
        raise TscnError("not a Godot text scene (no [gd_scene] header)")
    nodes: dict[str, NodeState] = {}
    connections: list[dict[str, str]] = []
    current: NodeState | None = None
    for kind, body in _statements(text):
        if kind == "header":
            section, _, rest = body.partition(" ")
            attrs = _attrs(rest)
            current = None
            if section == "node":
                if len(nodes) >= max_nodes:
                    raise TscnError(f"the scene has more than {max_nodes} nodes")
                name = attrs.get("name", "")
                parent = attrs.get("parent")
                if parent is None:
                    if "." in nodes:
                        raise TscnError("the scene has two root nodes")
                    path = "."
                else:
                    if parent != "." and parent not in nodes:
                        raise TscnError(f"node {name!r}: parent {parent!r} is not declared")
                    path = name if parent == "." else f"{parent}/{name}"
                current = NodeState(path, name, attrs.get("type", ""), parent)
                nodes[path] = current
            elif section == "connection":
                connections.append(
                    {k: attrs.get(k, "") for k in ("signal", "from", "to", "method")}
                )
        elif current is not None:
            match = _KEY.match(body)
            if match and match.group(1) in _WANTED:
                value = _value(body[match.end() :])
                if value is not None:
                    current.props[match.group(1)] = value
    if "." not in nodes:
        raise TscnError("the scene has no root node")
    _place(nodes, engine)
    return SceneState(nodes, connections)


Affine3 = tuple[list[list[float]], list[float]]
Affine2 = tuple[list[list[float]], list[float]]


def _local3(props: dict[str, Any]) -> Affine3:
    t = props.get("transform")
    if isinstance(t, list) and len(t) == 12:
        return [t[0:3], t[3:6], t[6:9]], t[9:12]
    return [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]], [0.0, 0.0, 0.0]


def _local2(props: dict[str, Any]) -> Affine2:
    pos = props.get("position")
    rot = props.get("rotation")
    if not isinstance(rot, float):
        deg = props.get("rotation_degrees")
        rot = math.radians(deg) if isinstance(deg, float) else 0.0
    scale = props.get("scale")
    sx, sy = (scale[0], scale[1]) if isinstance(scale, list) and len(scale) == 2 else (1.0, 1.0)
    c, s = math.cos(rot), math.sin(rot)
    origin = [pos[0], pos[1]] if isinstance(pos, list) and len(pos) == 2 else [0.0, 0.0]
    return [[c * sx, -s * sy], [s * sx, c * sy]], origin


def _compose(parent: Affine3 | Affine2, local: Affine3 | Affine2) -> Affine3 | Affine2:
    pb, po = parent
    lb, lo = local
    k = len(po)
    basis = [[sum(pb[r][m] * lb[m][c] for m in range(k)) for c in range(k)] for r in range(k)]
    origin = [sum(pb[r][m] * lo[m] for m in range(k)) + po[r] for r in range(k)]
    return basis, origin


def _place(nodes: dict[str, NodeState], engine: Engine) -> None:
    """World transforms in declaration order (a parent is always declared first). A chain
    of 3D (or 2D) nodes composes; a parent of another kind starts the chain anew, as in the
    engine."""
    world: dict[str, Affine3 | Affine2] = {}
    for path, node in nodes.items():
        node.dimension = engine.dimension(node.type, set(node.props))
        if node.dimension == 0:
            continue
        local = _local3(node.props) if node.dimension == 3 else _local2(node.props)
        parent = None
        if node.parent is not None:
            parent_path = "." if node.parent == "." else node.parent
            above = nodes.get(parent_path)
            if above is not None and above.dimension == node.dimension:
                parent = world.get(parent_path)
        placed = _compose(parent, local) if parent is not None else local
        world[path] = placed
        node.position = tuple(placed[1])
