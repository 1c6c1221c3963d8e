"""``call`` harnesses for compiled and scripted languages, generated on the host (trusted code).

For Python the judge calls the candidate across a process boundary (``_judge_candidate``). A C++, Go,
Rust or Java function can only be called from code linked into the same program, so the host
writes that program: a ``main`` that builds each case's arguments as typed literals (from the
task's JSON, escaped here), calls the candidate's function, and prints the return value as
JSON, one record line per case. The judge (``_judge.Judge.run_program_call``) runs it, reads
the records, and the host compares them with the expected values, as for Python.

Threat model (``docs/code.md`` says it in full): the candidate's code runs *in the harness's
process*, so it can write anything the harness can, on any fd, including lines that look like
records. That is harmless by construction: a record only carries the candidate's own answer for
the case the judge is waiting for; expected values never enter the sandbox; the judge accepts
exactly one record per case, in order, only for the case it started, and a record out of turn
fails the case; the comparison and the count of cases are the host's. A program that exits,
crashes or hangs during a case fails that case; the judge restarts the harness at the next one.

Types (``CallTests.signature``), one table per language (:data:`SYNTAX`), so a language is a
row and a type is a column, never a new emitter:

* ``int`` (C++/Java ``int``, Go ``int``, Rust ``i32``), ``long`` (64-bit), ``float`` (double),
  ``bool``, ``str``;
* ``list[T]`` (``std::vector``, ``java.util.List``, ``[]T``, ``Vec<T>``);
* ``dict[str,T]`` (``std::map<std::string,T>``, ``java.util.Map<String,T>``,
  ``map[string]T``, ``HashMap<String,T>``): a JSON object;
* ``tuple[T1,T2,...]`` (``std::tuple``, a Rust tuple; not Java or Go, which have none): a
  JSON list;
* ``&T`` at the top of a parameter: passed by reference (Rust ``&a``, which coerces to
  ``&str`` and ``&[T]``; C++ ``const T&`` parameters bind to values anyway; ignored by Java
  and Go).

JavaScript and TypeScript need none (arguments are ``JSON.parse``d).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verifiers.errors import BadInput

__all__ = ["MARK", "RAISES", "SYNTAX", "check_value", "harness_source", "parse_type"]

RAISES = frozenset({"cpp", "java", "javascript", "typescript"})
"""Languages whose harness reports a thrown exception's type, so ``raises`` cases work: C++
(the demangled type: ``std::invalid_argument``), Java (the simple class name:
``IllegalArgumentException``), JavaScript/TypeScript (the constructor's name: ``RangeError``).
Go and Rust panics are not exceptions (a panic fails the case)."""

MARK = "\x1e@"
"""Start of a harness record line: ``\\x1e@R <index> <json>`` or ``\\x1e@X <index> <json str>``."""

Type = str | tuple[Any, ...]
"""A parsed type: a scalar name, ``("list", T)``, ``("dict", T)``, ``("tuple", (T, ...))`` or
``("ref", T)`` (top level only)."""

_SCALARS = ("int", "long", "float", "bool", "str")
_IDENT_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_MAX_DEPTH = 8
_MAX_TYPE_CHARS = 400


def _type_error(text: str, why: str = "") -> BadInput:
    return BadInput(
        f"code.tests call signature: unknown type {text[:80]!r}{why}; use int, long, float, "
        "bool, str, list[T], dict[str,T], tuple[T,...] (nested up to 8), optionally '&' first"
    )


def parse_type(text: str) -> Type:
    """``"list[list[int]]"`` -> ``("list", ("list", "int"))``; ``"&str"`` -> ``("ref", "str")``.

    A recursive descent over at most 400 characters and 8 levels (linear in the text).

    Raises:
        BadInput: not a type of the vocabulary (the message lists it).
    """
    t = text.replace(" ", "")
    if len(t) > _MAX_TYPE_CHARS:
        raise _type_error(text, " (too long)")
    ref = t.startswith("&")
    pos, typ = _parse_at(t, 1 if ref else 0, 0, text)
    if pos != len(t):
        raise _type_error(text)
    return ("ref", typ) if ref else typ


def _parse_at(t: str, pos: int, depth: int, text: str) -> tuple[int, Type]:
    if depth > _MAX_DEPTH:
        raise _type_error(text, " (nested deeper than 8)")
    for scalar in _SCALARS:
        if t.startswith(scalar, pos) and not t.startswith("[", pos + len(scalar)):
            return pos + len(scalar), scalar
    for head in ("list[", "dict[str,", "tuple["):
        if t.startswith(head, pos):
            pos += len(head)
            items: list[Type] = []
            while True:
                pos, item = _parse_at(t, pos, depth + 1, text)
                items.append(item)
                if head != "tuple[" or not t.startswith(",", pos):
                    break
                pos += 1
            if not t.startswith("]", pos):
                raise _type_error(text)
            name = head.split("[")[0]
            return pos + 1, (name, tuple(items)) if name == "tuple" else (name, items[0])
    raise _type_error(text)


def check_value(value: Any, typ: Type, where: str) -> None:
    """Raise BadInput when ``value`` (JSON) does not fit ``typ``."""
    if isinstance(typ, tuple):
        kind = typ[0]
        if kind == "ref":
            check_value(value, typ[1], where)
        elif kind == "list":
            if not isinstance(value, list):
                raise BadInput(f"code.tests call: {where} must be a list for type list[...]")
            for i, v in enumerate(value):
                check_value(v, typ[1], f"{where}[{i}]")
        elif kind == "dict":
            if not isinstance(value, dict):
                raise BadInput(f"code.tests call: {where} must be an object for type dict[...]")
            for k, v in value.items():
                check_value(v, typ[1], f"{where}[{str(k)[:40]!r}]")
        else:
            if not isinstance(value, list) or len(value) != len(typ[1]):
                raise BadInput(
                    f"code.tests call: {where} must be a list of {len(typ[1])} for its tuple type"
                )
            for i, (v, t) in enumerate(zip(value, typ[1], strict=True)):
                check_value(v, t, f"{where}[{i}]")
        return
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31,
        "long": isinstance(value, int)
        and not isinstance(value, bool)
        and -(2**63) <= value < 2**63,
        "float": isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str),
    }[typ]
    if not ok:
        raise BadInput(
            f"code.tests call: {where} = {str(value)[:60]!r} does not fit type {typ} "
            "(int: 32-bit, long: 64-bit, float: finite)"
        )


def _float_text(value: float) -> str:
    text = repr(float(value))
    return text if any(c in text for c in ".e") else text + ".0"


def _escape_cpp(ch: str) -> str:
    return "".join(f"\\{b:03o}" for b in ch.encode("utf-8", "surrogatepass"))


def _escape_rust(ch: str) -> str:
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        raise BadInput("code.tests call: a str argument holds a lone surrogate")
    return f"\\u{{{code:x}}}"


def _escape_go(ch: str) -> str:
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        raise BadInput("code.tests call: a str argument holds a lone surrogate")
    return f"\\U{code:08x}"


def _escape_java(ch: str) -> str:
    code = ord(ch)
    if code < 0x80:
        # never \\u for ASCII: javac turns \\u0022 into a raw quote (and \\u000a into a line
        # break) *before* it reads the literal, so it would end the string.
        return f"\\{code:03o}"
    # beyond ASCII: UTF-16 units (no syntax character can come out of them)
    units = ch.encode("utf-16-be", "surrogatepass").hex(" ", 2).split()
    return "".join(f"\\u{unit}" for unit in units)


_PLAIN = frozenset(" _-+.,:;!?()[]{}<>=*/&|^~@#%'`")


@dataclass(frozen=True)
class Syntax:
    """How one typed language writes the harness: its types, literals and per-case code.

    Format fields: ``{t}`` a type, ``{v}`` a value, ``{items}`` comma-joined items, ``{k}`` a
    key literal, ``{n}`` an integer, ``{s}`` a string literal, ``{b}`` its UTF-8 length,
    ``{i}`` the case index, ``{j}`` the argument index, ``{decls}``, ``{call}``, ``{args}``.
    """

    scalars: dict[str, str]
    """Type of each scalar."""
    list_t: str
    dict_t: str
    tuple_t: str | None
    """None: the language has no tuples (BadInput)."""
    lit: dict[str, str]
    """Literal of each scalar kind (``int``, ``long``, ``float``, ``str``) and of ``list``,
    ``dict`` (with ``entry``), ``tuple``; ``int_min``/``long_min`` for the most negative."""
    escape: Callable[[str], str]
    """A string literal's escape of one character that is not plain ASCII."""
    decl: str
    """One argument's declaration (``{t}``, ``{j}``, ``{v}``)."""
    case: str
    """One case's code in ``main`` (``{i}``, ``{decls}``, ``{call}``)."""
    template: str
    """The whole program: ``@BODY@`` (the cases), ``@FUNCS@`` (Go: one function per case)."""
    func: str = ""
    """Go: one case's function (``{i}``, ``{decls}``, ``{call}``); ``case`` then calls it."""
    boxed: dict[str, str] | None = None
    """Type of a scalar as a generic argument (Java's boxes; None: the scalar types)."""
    ref: str = "a{j}"
    """How a by-reference argument ``a{j}`` is passed."""
    call: str = "{entry}({args})"
    """The call of the entry point (``{entry}``, ``{args}``)."""

    def type_text(self, typ: Type, boxed: bool = False) -> str:
        if not isinstance(typ, tuple):
            return ((self.boxed or self.scalars) if boxed else self.scalars)[typ]
        kind, inner = typ
        if kind == "ref":
            return self.type_text(inner, boxed)
        if kind == "list":
            return self.list_t.format(t=self.type_text(inner, True))
        if kind == "dict":
            return self.dict_t.format(t=self.type_text(inner, True))
        if self.tuple_t is None:
            raise BadInput("code.tests call: tuple types need C++ or Rust (use list[...])")
        return self.tuple_t.format(t=", ".join(self.type_text(x) for x in inner))

    def str_lit(self, value: str) -> str:
        body = "".join(
            ch if (ch.isascii() and ch.isalnum()) or ch in _PLAIN else self.escape(ch)
            for ch in value
        )
        return f'"{body}"'

    def literal(self, value: Any, typ: Type) -> str:
        if isinstance(typ, tuple):
            kind, inner = typ
            if kind == "ref":
                return self.literal(value, inner)
            if kind == "list":
                items = ", ".join(self.literal(v, inner) for v in value)
                return self.lit["list"].format(
                    t=self.type_text(typ), b=self.type_text(inner, True), items=items
                )
            if kind == "dict":
                items = ", ".join(
                    self.lit["entry"].format(k=self.literal(k, "str"), v=self.literal(v, inner))
                    for k, v in value.items()
                )
                return self.lit["dict"].format(
                    t=self.type_text(typ), b=self.type_text(inner, True), items=items
                )
            items = ", ".join(self.literal(v, t) for v, t in zip(value, inner, strict=True))
            return self.lit["tuple"].format(t=self.type_text(typ), items=items)
        if typ == "bool":
            return "true" if value else "false"
        if typ == "str":
            return self.lit["str"].format(
                s=self.str_lit(value), b=len(value.encode("utf-8", "surrogatepass"))
            )
        if typ == "float":
            return self.lit["float"].format(v=_float_text(value))
        n = int(value)
        if n == (-(2**31) if typ == "int" else -(2**63)) and f"{typ}_min" in self.lit:
            return self.lit[f"{typ}_min"]
        return self.lit[typ].format(n=n)

    def source(self, entry: str, cases: list[list[Any]], params: list[Type]) -> str:
        body, funcs = [], []
        for i, args in enumerate(cases):
            decls = "".join(
                self.decl.format(t=self.type_text(t), j=j, v=self.literal(v, t))
                for j, (v, t) in enumerate(zip(args, params, strict=True))
            )
            passed = ", ".join(
                self.ref.format(j=j) if isinstance(t, tuple) and t[0] == "ref" else f"a{j}"
                for j, t in enumerate(params)
            )
            call = self.call.format(entry=entry, args=passed)
            if self.func:
                funcs.append(self.func.format(i=i, decls=decls, call=call))
            body.append(self.case.format(i=i, decls=decls, call=call))
        return self.template.replace("@FUNCS@", "".join(funcs)).replace("@BODY@", "".join(body))


def _check_ident(name: str) -> None:
    if not name or not set(name) <= _IDENT_OK or name[0].isdigit() or len(name) > 100:
        raise BadInput(
            f"code.tests call: entry_point {name[:60]!r} must be a plain identifier in this language"
        )


def harness_source(lang: str, entry: str, cases: list[list[Any]], params: list[Type] | None) -> str:
    """The harness program for ``lang`` calling ``entry`` on each case's arguments.

    Raises:
        BadInput: the entry point is not an identifier, or (typed languages) there is no
            signature, an argument does not fit it, or the language lacks one of its types.
    """
    _check_ident(entry)
    if lang in ("javascript", "typescript"):
        return _js(entry, cases)
    if params is None:
        raise BadInput(
            f"code.tests call in {lang} needs tests.signature (e.g. "
            '{"params": ["int", "list[int]"]}) to build typed arguments'
        )
    for i, args in enumerate(cases):
        if len(args) != len(params):
            raise BadInput(
                f"code.tests call: cases[{i}] has {len(args)} args, the signature {len(params)}"
            )
        for j, (value, typ) in enumerate(zip(args, params, strict=True)):
            check_value(value, typ, f"cases[{i}].args[{j}]")
    return SYNTAX[lang].source(entry, cases, params)


def _js(entry: str, cases: list[list[Any]]) -> str:
    data = json.dumps(json.dumps(cases))
    return _JS.replace("@ENTRY@", entry).replace("@CASES@", data)


# -- templates (the record writers; each flushes the candidate's own buffered output first) ---

_JS = r"""'use strict';
// code.tests call harness (generated on the host; trusted).
const vhFs = require('fs');
const vhVm = require('vm');
const vhPath = require('path');
const vhWrite = vhFs.writeSync.bind(vhFs);
const vhStringify = JSON.stringify;
function vhEmit(kind, i, text) { vhWrite(1, '\x1e@' + kind + ' ' + i + ' ' + text + '\n'); }
class VhHarnessError extends Error {}
function vhRaise(i, e) {
  // {"type", "message"}: the thrown value's class (matched against a case's ``raises``); the
  // harness's own errors (no function, no JSON value) carry no type and match nothing.
  let msg, type = '';
  try { msg = (e && e.stack) ? String(e.stack) : String(e); } catch (_) { msg = 'unprintable exception'; }
  try {
    if (!(e instanceof VhHarnessError)) {
      const c = (e !== null && (typeof e === 'object' || typeof e === 'function')) ? Object.getPrototypeOf(e) : null;
      const ctor = c && Object.getOwnPropertyDescriptor(c, 'constructor');
      const name = ctor && typeof ctor.value === 'function' ? Object.getOwnPropertyDescriptor(ctor.value, 'name') : null;
      type = name && typeof name.value === 'string' ? name.value : typeof e;
    }
  } catch (_) { type = ''; }
  vhEmit('X', i, vhStringify({ type: String(type).slice(0, 200), message: String(msg).slice(0, 4000) }));
}
async function vhMain() {
  const file = vhPath.resolve(process.argv[2]);
  const start = Number(process.argv[3] || 0);
  const src = vhFs.readFileSync(file, 'utf8');
  const mod = { exports: {} };
  const wrapped = vhVm.compileFunction(
    src + '\n;return (typeof @ENTRY@ !== "undefined") ? @ENTRY@ : undefined;',
    ['require', 'module', 'exports', '__filename', '__dirname'],
    { filename: file });
  const cases = JSON.parse(@CASES@);
  let target;
  if (start < cases.length) {
    try {
      target = wrapped(require, mod, mod.exports, file, vhPath.dirname(file));
    } catch (e) { vhRaise(start, e); return; }
    if (typeof target !== 'function') {
      const ex = mod.exports;
      target = (ex && typeof ex['@ENTRY@'] === 'function') ? ex['@ENTRY@'] : (typeof ex === 'function' ? ex : target);
    }
  }
  for (let i = start; i < cases.length; i++) {
    try {
      if (typeof target !== 'function') throw new VhHarnessError('@ENTRY@ is not a function defined by the solution');
      let v = target(...cases[i]);
      if (v && typeof v.then === 'function') v = await v;
      const text = v === undefined ? undefined : vhStringify(v);
      if (text === undefined) throw new VhHarnessError('returned undefined (not JSON)');
      vhEmit('R', i, text);
    } catch (e) { vhRaise(i, e); }
  }
}
vhMain().then(() => process.exit(0), (e) => { process.stderr.write(String(e) + '\n'); process.exit(1); });
"""

_CPP = r"""// code.tests call harness (generated on the host; trusted). The fixed part (every standard
// header and the record codec) is the runtime's precompiled verifiers_call.h (built once per
// runtime, read-only); the solution comes next, so its lines stay solution.cpp:N in messages.
#include <verifiers_call.h>
#include "solution.cpp"
#include <cxxabi.h>

// {"type", "message"}: the thrown object's demangled type (std::invalid_argument, MyError,
// int), matched against a case's ``raises``.
static void vh_raise_current(int i, const char* what) {
  std::string type = "unknown";
  if (std::type_info* t = abi::__cxa_current_exception_type()) {
    int st = 0;
    char* d = abi::__cxa_demangle(t->name(), nullptr, nullptr, &st);
    type = (st == 0 && d) ? d : t->name();
    std::free(d);
  }
  std::string o = "{\"type\":";
  vh_str(o, type);
  o += ",\"message\":";
  vh_str(o, what ? what : "");
  vh_emit('X', i, o + "}");
}

int main(int argc, char** argv) {
  vh_start = argc > 1 ? std::atoi(argv[1]) : 0;
@BODY@  std::cout.flush();
  return 0;
}
"""

_JAVA = r"""// code.tests call harness (generated on the host; trusted).
public final class VerifiersHarness {
  private static final java.io.PrintStream OUT =
      new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true);

  private static void emit(char kind, int i, String text) {
    System.out.flush();
    OUT.print("\u001e@" + kind + " " + i + " " + text + "\n");
    OUT.flush();
  }

  private static void str(StringBuilder o, String s) {
    o.append('"');
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      if (c == '"' || c == '\\') { o.append('\\').append(c); }
      else if (c < 0x20 || (c >= 0xD800 && c <= 0xDFFF)) { o.append(String.format("\\u%04x", (int) c)); }
      else { o.append(c); }
    }
    o.append('"');
  }

  private static final class VhHarnessError extends RuntimeException {
    VhHarnessError(String msg) { super(msg); }
  }

  private static void raise(int i, String msg) {
    StringBuilder o = new StringBuilder();
    str(o, msg == null ? "" : msg);
    emit('X', i, o.toString());
  }

  // {"type", "message"}: the exception's simple class name (matched against a case's
  // ``raises``); the harness's own errors carry no type and match nothing.
  private static void raise(int i, Throwable e) {
    StringBuilder o = new StringBuilder("{\"type\":");
    str(o, e instanceof VhHarnessError ? "" : e.getClass().getSimpleName());
    o.append(",\"message\":");
    str(o, describe(e));
    emit('X', i, o.append('}').toString());
  }

  private static String describe(Throwable e) {
    String text = e.toString();
    for (StackTraceElement f : e.getStackTrace()) {
      if (!"VerifiersHarness.java".equals(f.getFileName()) && f.getLineNumber() > 0) {
        return text + " (at " + f.getFileName() + ":" + f.getLineNumber() + ")";
      }
    }
    return text;
  }

  private static void put(StringBuilder o, Object v) {
    if (v == null) { o.append("null"); }
    else if (v instanceof Boolean) { o.append(((Boolean) v) ? "true" : "false"); }
    else if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      if (Double.isNaN(d)) { o.append("NaN"); }
      else if (Double.isInfinite(d)) { o.append(d > 0 ? "Infinity" : "-Infinity"); }
      else { o.append(Double.toString(d)); }
    }
    else if (v instanceof Number) { o.append(v.toString()); }
    else if (v instanceof Character) { str(o, v.toString()); }
    else if (v instanceof CharSequence) { str(o, v.toString()); }
    else if (v instanceof java.util.Map<?, ?>) {
      o.append('{');
      boolean first = true;
      for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) {
        if (!first) { o.append(','); }
        first = false;
        str(o, String.valueOf(e.getKey()));
        o.append(':');
        put(o, e.getValue());
      }
      o.append('}');
    }
    else if (v instanceof Iterable<?>) {
      o.append('[');
      boolean first = true;
      for (Object x : (Iterable<?>) v) { if (!first) { o.append(','); } first = false; put(o, x); }
      o.append(']');
    }
    else if (v.getClass().isArray()) {
      o.append('[');
      int n = java.lang.reflect.Array.getLength(v);
      for (int k = 0; k < n; k++) { if (k > 0) { o.append(','); } put(o, java.lang.reflect.Array.get(v, k)); }
      o.append(']');
    }
    else { throw new VhHarnessError("return value of type " + v.getClass().getName() + " is not plain data"); }
  }

  @SuppressWarnings({"static", "unchecked", "rawtypes"})
  public static void main(String[] args) {
    int start = args.length > 0 ? Integer.parseInt(args[0]) : 0;
@BODY@    System.out.flush();
  }
}
"""

_GO = r"""// code.tests call harness (generated on the host; trusted).
package main

import (
	vhjson "encoding/json"
	vhfmt "fmt"
	vhos "os"
	vhdebug "runtime/debug"
	vhstrconv "strconv"
	vhstrings "strings"
)

var vhStart int

func vhEmit(kind string, i int, text string) {
	vhos.Stdout.WriteString("\x1e@" + kind + " " + vhstrconv.Itoa(i) + " " + text + "\n")
}

func vhRaise(i int, msg string) {
	b, _ := vhjson.Marshal(msg)
	vhEmit("X", i, string(b))
}

func vhRecover(i int) {
	if r := recover(); r != nil {
		where := ""
		for _, line := range vhstrings.Split(string(vhdebug.Stack()), "\n") {
			if vhstrings.Contains(line, "solution.go:") {
				where = " (at " + vhstrings.TrimSpace(line) + ")"
				break
			}
		}
		vhRaise(i, "panic: "+vhfmt.Sprint(r)+where)
	}
}

func vhResult(i int, v interface{}) {
	b, err := vhjson.Marshal(v)
	if err != nil {
		vhRaise(i, "return value is not JSON: "+err.Error())
		return
	}
	vhEmit("R", i, string(b))
}

@FUNCS@
func main() {
	if len(vhos.Args) > 1 {
		vhStart, _ = vhstrconv.Atoi(vhos.Args[1])
	}
@BODY@}
"""

_RUST = r"""// code.tests call harness (generated on the host; trusted).
include!("solution.rs");

#[allow(dead_code)]
trait VhJson { fn vh_json(&self, o: &mut String); }
macro_rules! vh_int { ($($t:ty),*) => { $(impl VhJson for $t { fn vh_json(&self, o: &mut String) { o.push_str(&self.to_string()); } })* } }
vh_int!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
impl VhJson for f64 {
    fn vh_json(&self, o: &mut String) {
        if self.is_nan() { o.push_str("NaN"); }
        else if self.is_infinite() { o.push_str(if *self > 0.0 { "Infinity" } else { "-Infinity" }); }
        else { o.push_str(&format!("{:?}", self)); }
    }
}
impl VhJson for f32 { fn vh_json(&self, o: &mut String) { (*self as f64).vh_json(o) } }
impl VhJson for bool { fn vh_json(&self, o: &mut String) { o.push_str(if *self { "true" } else { "false" }); } }
impl VhJson for str {
    fn vh_json(&self, o: &mut String) {
        o.push('"');
        for c in self.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
                c => o.push(c),
            }
        }
        o.push('"');
    }
}
impl VhJson for String { fn vh_json(&self, o: &mut String) { self.as_str().vh_json(o) } }
impl VhJson for char { fn vh_json(&self, o: &mut String) { self.to_string().vh_json(o) } }
impl<T: VhJson + ?Sized> VhJson for &T { fn vh_json(&self, o: &mut String) { (**self).vh_json(o) } }
impl<T: VhJson> VhJson for Vec<T> { fn vh_json(&self, o: &mut String) { self.as_slice().vh_json(o) } }
impl<T: VhJson> VhJson for [T] {
    fn vh_json(&self, o: &mut String) {
        o.push('[');
        for (k, x) in self.iter().enumerate() { if k > 0 { o.push(','); } x.vh_json(o); }
        o.push(']');
    }
}
macro_rules! vh_tuple { ($(($($n:tt $t:ident),+)),*) => { $(impl<$($t: VhJson),+> VhJson for ($($t,)+) {
    fn vh_json(&self, o: &mut String) { o.push('['); let mut _k = 0; $( if _k > 0 { o.push(','); } _k += 1; self.$n.vh_json(o); )+ o.push(']'); }
})* } }
vh_tuple!((0 A), (0 A, 1 B), (0 A, 1 B, 2 C), (0 A, 1 B, 2 C, 3 D), (0 A, 1 B, 2 C, 3 D, 4 E), (0 A, 1 B, 2 C, 3 D, 4 E, 5 F));
fn vh_map<'a, V: VhJson + 'a>(items: impl Iterator<Item = (&'a String, &'a V)>, o: &mut String) {
    let mut all: Vec<(&String, &V)> = items.collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    o.push('{');
    for (k, (key, v)) in all.into_iter().enumerate() { if k > 0 { o.push(','); } key.vh_json(o); o.push(':'); v.vh_json(o); }
    o.push('}');
}
impl<V: VhJson> VhJson for std::collections::HashMap<String, V> { fn vh_json(&self, o: &mut String) { vh_map(self.iter(), o) } }
impl<V: VhJson> VhJson for std::collections::BTreeMap<String, V> { fn vh_json(&self, o: &mut String) { vh_map(self.iter(), o) } }
impl<T: VhJson> VhJson for Option<T> {
    fn vh_json(&self, o: &mut String) { match self { Some(x) => x.vh_json(o), None => o.push_str("null") } }
}

fn vh_emit(kind: char, i: usize, text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let line = format!("\x1e@{} {} {}\n", kind, i, text);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}
fn vh_raise(i: usize, msg: &str) { let mut o = String::new(); msg.vh_json(&mut o); vh_emit('X', i, &o); }
thread_local! { static VH_WHERE: std::cell::RefCell<String> = std::cell::RefCell::new(String::new()); }
fn vh_panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    let at = VH_WHERE.with(|w| w.borrow().clone());
    let text = if let Some(s) = e.downcast_ref::<&str>() { s.to_string() }
        else if let Some(s) = e.downcast_ref::<String>() { s.clone() }
        else { String::new() };
    format!("panic: {} (at {})", text, at)
}

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        VH_WHERE.with(|w| *w.borrow_mut() = at);
    }));
    let vh_start: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(0);
@BODY@}
"""


def _types(*names: str) -> dict[str, str]:
    """A language's type for each scalar kind, given in ``_SCALARS`` order."""
    return dict(zip(_SCALARS, names, strict=True))


_BRACED: dict[str, str] = {
    "int": "{n}",
    "float": "{v}",
    "str": "{s}",
    "list": "{t}{{{items}}}",
    "dict": "{t}{{{items}}}",
}
"""The literals C++, Java and Go share (a typed brace list); each row overrides the rest."""

SYNTAX: dict[str, Syntax] = {
    "cpp": Syntax(
        scalars=_types("int", "long long", "double", "bool", "std::string"),
        list_t="std::vector<{t}>",
        dict_t="std::map<std::string, {t}>",
        tuple_t="std::tuple<{t}>",
        lit={
            **_BRACED,
            "int_min": "(-2147483647 - 1)",
            "long": "{n}LL",
            "long_min": "(-9223372036854775807LL - 1)",
            "str": "std::string({s}, {b})",
            "entry": "{{{k}, {v}}}",
            "tuple": "{t}{{{items}}}",
        },
        escape=_escape_cpp,
        decl="    {t} a{j} = {v};\n",
        case=(
            "  if (vh_start <= {i}) {{\n    try {{\n{decls}"
            "    std::string vh_o; vh_put(vh_o, {call}); vh_emit('R', {i}, vh_o);\n"
            "    }} catch (const std::exception& vh_e) {{ vh_raise_current({i}, vh_e.what()); }}"
            ' catch (...) {{ vh_raise_current({i}, ""); }}\n  }}\n'
        ),
        template=_CPP,
    ),
    "java": Syntax(
        scalars=_types("int", "long", "double", "boolean", "String"),
        boxed=_types("Integer", "Long", "Double", "Boolean", "String"),
        list_t="java.util.List<{t}>",
        dict_t="java.util.Map<String, {t}>",
        tuple_t=None,
        lit={
            **_BRACED,
            "long": "{n}L",
            "list": "new java.util.ArrayList<{b}>(java.util.Arrays.<{b}>asList({items}))",
            "dict": "new java.util.LinkedHashMap<String, {b}>(java.util.Map.<String, {b}>ofEntries({items}))",
            "entry": "java.util.Map.entry({k}, {v})",
        },
        escape=_escape_java,
        decl="        {t} a{j} = {v};\n",
        call="vhTarget.{entry}({args})",
        case=(
            "    if (start <= {i}) {{\n      try {{\n{decls}"
            "        Solution vhTarget = new Solution();\n"
            "        StringBuilder o = new StringBuilder(); put(o, {call}); emit('R', {i}, o.toString());\n"
            "      }} catch (Throwable e) {{ raise({i}, e); }}\n    }}\n"
        ),
        template=_JAVA,
    ),
    "go": Syntax(
        scalars=_types("int", "int64", "float64", "bool", "string"),
        list_t="[]{t}",
        dict_t="map[string]{t}",
        tuple_t=None,
        lit={
            **_BRACED,
            "int": "int({n})",
            "long": "int64({n})",
            "float": "float64({v})",
            "entry": "{k}: {v}",
        },
        escape=_escape_go,
        decl="\tvar a{j} {t} = {v}\n",
        func="func vhCase{i}() {{\n\tdefer vhRecover({i})\n{decls}\tvhResult({i}, {call})\n}}\n",
        case="\tif vhStart <= {i} {{\n\t\tvhCase{i}()\n\t}}\n",
        template=_GO,
    ),
    "rust": Syntax(
        scalars=_types("i32", "i64", "f64", "bool", "String"),
        list_t="Vec<{t}>",
        dict_t="std::collections::HashMap<String, {t}>",
        tuple_t="({t},)",
        lit={
            "int": "{n}_i32",
            "long": "{n}_i64",
            "float": "{v}_f64",
            "str": "String::from({s})",
            "list": "vec![{items}]",
            "dict": "std::collections::HashMap::from([{items}])",
            "entry": "({k}, {v})",
            "tuple": "({items},)",
        },
        escape=_escape_rust,
        decl="            let a{j}: {t} = {v};\n",
        ref="&a{j}",
        case=(
            "    if vh_start <= {i} {{\n"
            "        let r = std::panic::catch_unwind(|| {{\n{decls}"
            "            let mut o = String::new(); VhJson::vh_json(&{call}, &mut o); o\n"
            "        }});\n        match r {{ Ok(o) => vh_emit('R', {i}, &o), "
            "Err(e) => vh_raise({i}, &vh_panic_text(e)) }}\n    }}\n"
        ),
        template=_RUST,
    ),
}
"""The typed languages' harness syntax: one row per language (see :class:`Syntax`)."""
