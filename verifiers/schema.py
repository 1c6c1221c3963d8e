"""JSON Schemas of the data contract, generated from the pydantic models.

``python -m verifiers.schema`` writes ``docs/schema/trajectory.schema.json`` and
``docs/schema/result.schema.json``; ``--check`` exits 1 (naming the stale files) when the
committed files differ from what the models generate, which a test runs so the docs cannot
drift from the code.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .types import Result, Trajectory

__all__ = ["SCHEMAS", "default_dir", "main", "render", "schema_for"]

SCHEMAS: dict[str, type[BaseModel]] = {
    "trajectory.schema.json": Trajectory,
    "result.schema.json": Result,
}
"""File name -> model."""

_ID_BASE = "https://github.com/verifiers/verifiers/docs/schema/"


def _attribute_docs(model: type[BaseModel]) -> dict[str, str]:
    """Field docs written as attribute docstrings (``x: int`` then ``\"\"\"doc\"\"\"``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(model)))
    except (OSError, TypeError, SyntaxError):
        return {}
    docs: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node, following in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _models(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """``model`` and every model reachable from its fields, by class name."""
    found: dict[str, type[BaseModel]] = {}
    todo = [model]
    while todo:
        current = todo.pop()
        if current.__name__ in found:
            continue
        found[current.__name__] = current
        for field in current.model_fields.values():
            for arg in _walk_types(field.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    todo.append(arg)
    return found


def _walk_types(annotation: Any) -> list[Any]:
    out = [annotation]
    for arg in typing.get_args(annotation):
        out.extend(_walk_types(arg))
    return out


def _describe(schema: dict[str, Any], model: type[BaseModel]) -> None:
    for name, docs in ((n, _attribute_docs(m)) for n, m in _models(model).items()):
        target = schema if name == model.__name__ else schema.get("$defs", {}).get(name, {})
        for field, text in docs.items():
            prop = target.get("properties", {}).get(field)
            if prop is not None and "description" not in prop:
                prop["description"] = text


def schema_for(model: type[BaseModel], filename: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``model``, in its input (validation) mode.

    Field descriptions come from the models' attribute docstrings, so they are written once.
    """
    schema = model.model_json_schema(mode="validation")
    _describe(schema, model)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": _ID_BASE + filename,
        **schema,
    }


def render(filename: str) -> str:
    """The exact text written for ``filename`` (stable key order, trailing newline)."""
    return json.dumps(schema_for(SCHEMAS[filename], filename), indent=2, ensure_ascii=False) + "\n"


def default_dir() -> Path:
    """``docs/schema`` of the source checkout when run from one, else under the cwd."""
    checkout = Path(__file__).resolve().parent.parent / "docs" / "schema"
    if checkout.parent.is_dir():
        return checkout
    return Path.cwd() / "docs" / "schema"


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` verify) the schema files; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m verifiers.schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the files are stale")
    parser.add_argument("--out", type=Path, default=None, help="directory (default docs/schema)")
    args = parser.parse_args(argv)
    out: Path = args.out or default_dir()
    stale = []
    for filename in SCHEMAS:
        path = out / filename
        text = render(filename)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path))
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print(
            "stale JSON Schemas: " + ", ".join(stale) + " (run: python -m verifiers.schema)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
