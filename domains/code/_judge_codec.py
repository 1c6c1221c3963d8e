"""Tagged JSON for plain Python values: the one piece of the judge the host imports.

Values cross two process boundaries as JSON: judge <-> candidate (arguments and return values of
remote calls) and host -> judge (``call`` arguments). Lists and JSON primitives stand for
themselves; everything else is an object ``{"$": tag, "v": ...}``. Decoding builds only builtin
types (never a class the sender names), within :data:`MAX_ITEMS` items and :data:`MAX_DEPTH`
levels, so a hostile encoded value costs bounded time and memory and fails as
:class:`CodecError`.

Loaded in the sandbox as one module of the judge (stdlib only, see ``_judge_boot``) and
imported by the host (``_kinds``, ``_spec``), which never imports the rest of the judge.
"""

from __future__ import annotations

import math

# Kept out of the judge's start-up path (every millisecond here is paid per sample); mypy
# treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "CodecError", "decode", "encode"]

MAX_DEPTH = 100
"""Deepest nesting of an encoded value."""
MAX_ITEMS = 1_000_000
"""Most items (at every level together) one decoded value may have."""
_BIG_INT = 1 << 63


class CodecError(Exception):
    """A value cannot be encoded, or an encoded value is malformed."""


# Named in the model's feedback as it was when the judge was one ``__main__`` module (see
# ``_judge_candidate.CandidateError``).
CodecError.__module__ = "__main__"


# ---------------------------------------------------------------------------------------------


def encode(obj: Any, ref: Callable[[Any], Any] | None = None, _depth: int = 0) -> Any:
    """Encode plain data (None/bool/int/float/str/bytes/complex/list/tuple/dict/set).

    ``ref`` turns anything else into a handle; without it such values raise ``CodecError``.
    Subclasses of builtins (IntEnum, namedtuple, OrderedDict ...) are encoded as their base.
    """
    if _depth > MAX_DEPTH:
        raise CodecError("value nested too deeply")
    t = type(obj)
    d = _depth + 1
    if obj is None or t is bool or t is str:
        return obj
    if t is int:
        return obj if -_BIG_INT < obj < _BIG_INT else {"$": "int", "v": hex(obj)}
    if t is float:
        if math.isfinite(obj):
            return obj
        return {"$": "float", "v": repr(obj)}
    if t is list:
        return [encode(x, ref, d) for x in obj]
    if t is tuple:
        return {"$": "tuple", "v": [encode(x, ref, d) for x in obj]}
    if t is dict:
        return {"$": "dict", "v": [[encode(k, ref, d), encode(v, ref, d)] for k, v in obj.items()]}
    if t is set or t is frozenset:
        return {"$": t.__name__, "v": [encode(x, ref, d) for x in obj]}
    if t is bytes or t is bytearray:
        import base64

        return {"$": "bytes", "v": base64.b64encode(bytes(obj)).decode("ascii")}
    if t is complex:
        return {"$": "complex", "v": [encode(obj.real), encode(obj.imag)]}
    try:
        return _encode_subclass(obj, ref, d)
    except CodecError:
        raise
    except Exception:
        if ref is not None:
            return ref(obj)
        raise CodecError(f"cannot encode a {type(obj).__name__} object") from None


def _encode_subclass(obj: Any, ref: Callable[[Any], Any] | None, d: int) -> Any:
    # Honest subclasses of builtins and numpy values: encode as the plain base value.
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return encode(int.__index__(obj), ref, d)
    if isinstance(obj, float):
        return encode(float.__float__(obj), ref, d)
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, (list, tuple, dict, set, frozenset, bytes, bytearray)):
        base: Any = next(
            b for b in (list, tuple, dict, set, frozenset, bytes, bytearray) if isinstance(obj, b)
        )
        return encode(base(obj), ref, d)
    if type(obj).__module__ == "numpy" and hasattr(obj, "tolist"):
        return encode(obj.tolist(), ref, d)
    if ref is not None:
        return ref(obj)
    raise CodecError(f"cannot encode a {type(obj).__name__} object")


def decode(data: Any, ref: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """Inverse of :func:`encode`, building only builtin objects (``ref`` maps handles).

    Raises:
        CodecError: malformed input, unhashable keys, or too many items.
    """
    budget = [MAX_ITEMS]
    try:
        return _decode(data, ref, budget, 0)
    except (TypeError, ValueError, KeyError, RecursionError) as exc:
        raise CodecError(f"malformed value: {exc!r}"[:300]) from None


def _decode(
    data: Any, ref: Callable[[dict[str, Any]], Any] | None, budget: list[int], depth: int
) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH + 2:
        raise CodecError("value too large or nested too deeply")
    t = type(data)
    if data is None or t is bool or t is str or t is int:
        return data
    if t is float:
        return data
    if t is list:
        return [_decode(x, ref, budget, depth + 1) for x in data]
    if t is not dict:
        raise CodecError(f"unexpected {t.__name__} in encoded value")
    tag = data.get("$")
    value = data.get("v")
    if tag == "ref":
        if ref is None:
            raise CodecError("unexpected object handle")
        return ref(data)
    if tag == "int":
        return int(str(value), 16)
    if tag == "float":
        if value not in ("nan", "inf", "-inf"):
            raise CodecError(f"bad float {value!r}")
        return float(value)
    if tag == "bytes":
        import base64

        return base64.b64decode(str(value), validate=True)
    if tag == "complex":
        re_, im = (float(_decode(x, None, budget, depth + 1)) for x in value)
        return complex(re_, im)
    if type(value) is not list:
        raise CodecError(f"bad encoded {tag!r}")
    items = [_decode(x, ref, budget, depth + 1) for x in value]
    if tag == "tuple":
        return tuple(items)
    if tag == "set":
        return set(items)
    if tag == "frozenset":
        return frozenset(items)
    if tag == "dict":
        out: dict[Any, Any] = {}
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise CodecError("bad dict item")
            out[pair[0]] = pair[1]
        return out
    raise CodecError(f"unknown tag {tag!r}")
