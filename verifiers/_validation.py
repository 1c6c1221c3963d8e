"""Readable accounts of settings that do not validate: a spec key, an engine setting.

For a reward function a misspelt setting that silently does nothing is the worst kind of bug
(``{"rel_tool": 0.1}`` would score with the default tolerance), so specs reject unknown keys
and say which key was meant; a setting that is out of range says its value, where it came
from, and what is allowed. One line per problem, so a CLI can print them as they are.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

__all__ = [
    "closest",
    "expectation",
    "model_error_lines",
    "models_within",
    "settings_problems",
]


def closest(name: str, choices: list[str]) -> str | None:
    """The choice ``name`` most likely meant (a typo), or None."""
    lowered = {choice.lower(): choice for choice in choices}
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def _type_words(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        parts = [a for a in typing.get_args(annotation) if a is not type(None)]
        words = " or ".join(_type_words(a) for a in parts)
        return words + (" (or null)" if len(parts) < len(typing.get_args(annotation)) else "")
    if origin in (list, tuple, set, frozenset):
        return "a list"
    if origin is dict:
        return "an object"
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "an object"
        return names.get(annotation, annotation.__name__)
    return str(annotation)


def expectation(info: FieldInfo) -> str:
    """What a field accepts, in words: ``an integer >= 1``, ``one of 'a', 'b'``."""
    words = _type_words(info.annotation)
    bounds = []
    for item in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None:
                bounds.append(
                    f"{sign} {value:g}" if isinstance(value, float) else f"{sign} {value}"
                )
    return words + (" " + " and ".join(bounds) if bounds else "")


def models_within(model: type[BaseModel]) -> Iterator[type[BaseModel]]:
    """``model`` and every pydantic model reachable through its field annotations."""
    seen: set[type[BaseModel]] = set()
    stack = [model]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        for info in current.model_fields.values():
            todo = [info.annotation]
            while todo:
                annotation = todo.pop()
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    stack.append(annotation)
                todo.extend(typing.get_args(annotation))


def _at(raw: Any, loc: tuple[int | str, ...]) -> Any:
    """The raw value at ``loc``, skipping the union-member tags pydantic inserts."""
    value = raw
    for part in loc:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
    return value


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model validating the object at ``loc`` (None when the path cannot be followed)."""
    options: list[Any] = [model]
    for part in loc:
        nxt: list[Any] = []
        for option in options:
            if isinstance(option, type) and issubclass(option, BaseModel):
                if isinstance(part, str) and part in option.model_fields:
                    nxt.append(option.model_fields[part].annotation)
                elif isinstance(part, str) and part == option.__name__:
                    nxt.append(option)  # a union-member tag
                continue
            origin = typing.get_origin(option)
            args = [a for a in typing.get_args(option) if a is not type(None)]
            if origin in (typing.Union, types.UnionType):
                named = [a for a in args if getattr(a, "__name__", None) == part]
                nxt.extend(named or args)
            elif origin in (list, tuple) and isinstance(part, int) and args:
                nxt.append(args[0])
            elif origin is dict and len(args) == 2:
                nxt.append(args[1])
        options = nxt
        # unwrap unions/optionals that do not consume a path part
        flat: list[Any] = []
        while options:
            option = options.pop()
            if typing.get_origin(option) in (typing.Union, types.UnionType):
                options.extend(a for a in typing.get_args(option) if a is not type(None))
            else:
                flat.append(option)
        options = flat
    found = [o for o in options if isinstance(o, type) and issubclass(o, BaseModel)]
    return found[0] if len(found) == 1 else None


def _unknown_key(model: type[BaseModel], raw: Any, loc: tuple[int | str, ...]) -> str:
    key = str(loc[-1])
    owner = _model_at(model, loc[:-1])
    if owner is None:
        siblings = _at(raw, loc[:-1])
        present = set(siblings) if isinstance(siblings, Mapping) else set()
        # The model meant here: the reachable one whose fields best cover the keys beside it.
        owner = max(
            models_within(model),
            key=lambda m: (len(present & set(m.model_fields)), m is model),
        )
    fields = sorted(owner.model_fields)
    guess = closest(key, fields)
    if guess is not None:
        return f"unknown key {key!r} (did you mean {guess!r}?)"
    shown = ", ".join(fields[:15]) + (" ..." if len(fields) > 15 else "")
    return f"unknown key {key!r} (valid keys: {shown})"


_UNION_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none"})


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def model_error_lines(
    exc: ValidationError, model: type[BaseModel], raw: Any, *, where: str = ""
) -> list[str]:
    """One line per problem in ``exc`` (raised validating ``raw`` as ``model``).

    Unknown keys name the closest valid key; bad values show the value given and, for a
    top-level field, what the field accepts.
    """
    lines: list[str] = []
    errors = exc.errors(include_url=False)
    locs = [tuple(err["loc"]) for err in errors]
    for err in errors:
        loc = tuple(err["loc"])
        if (
            loc
            and loc[-1] in _UNION_TAGS
            and any(other[: len(loc) - 1] == loc[:-1] and other != loc for other in locs)
        ):
            continue  # "or a plain string" beside the real problem of a union's model member
        path = ".".join(str(p) for p in loc)
        label = f"{where}.{path}" if where and path else (where or path or "(root)")
        if err["type"] == "extra_forbidden" and loc:
            lines.append(f"{label}: {_unknown_key(model, raw, loc)}")
            continue
        message = str(err["msg"])
        if err["type"] != "missing" and "input" in err:
            message = f"got {_shown(err['input'])}: {message}"
        info = model.model_fields.get(str(loc[0])) if len(loc) == 1 else None
        if info is not None and err["type"] != "missing":
            message += f" (expected {expectation(info)})"
        lines.append(f"{label}: {message}")
    return lines


def settings_problems(
    exc: ValidationError,
    model: type[BaseModel],
    values: Mapping[str, Any],
    sources: Mapping[str, str],
) -> list[str]:
    """One line per invalid setting: ``invalid setting --timeout=-1: must be a number > 0``.

    ``sources`` names where each value came from (a flag, a ``VERIFIERS_*`` variable).
    """
    lines: list[str] = []
    seen: set[str] = set()
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        name = str(loc[0]) if loc else ""
        if name in seen:
            continue  # one line per setting (a union reports each member)
        seen.add(name)
        source = sources.get(name, name)
        if err["type"] == "extra_forbidden":
            guess = closest(name, list(model.model_fields))
            hint = f" (did you mean {guess!r}?)" if guess else ""
            lines.append(f"invalid setting {source}: unknown setting{hint}")
            continue
        info = model.model_fields.get(name)
        if err["type"] in ("value_error", "assertion_error") or info is None:
            # A field validator's own words say best what is allowed.
            wanted = (
                str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
            )
        else:
            wanted = f"must be {expectation(info)}"
        lines.append(f"invalid setting {source}={_shown(values.get(name))}: {wanted}")
    return lines or [f"invalid settings: {exc}"]
