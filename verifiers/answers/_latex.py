"""LaTeX / plain-text math answers to a Python *expression string* a whitelist can walk.

The pipeline for an untrusted answer is::

    LaTeX text --latex_to_plain--> plain math (x^2 -> x**(2), \\frac{a}{b} -> ((a)/(b)))
               --split_structure--> expression / tuple / set / interval / equation pieces
               --tokenize+emit----> a Python expression using only numbers, names, + - * / **,
                                    parentheses and calls of whitelisted function names

``verifiers.answers._mathparse`` then runs ``ast.parse(mode="eval")`` on each piece and
converts a whitelist of node types into sympy objects. No text ever reaches ``eval``,
``sympify`` or ``parse_expr``. Sizes are bounded at every step (length, bracket depth, digits).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

__all__ = [
    "FUNCTIONS",
    "MathParseError",
    "Piece",
    "latex_to_plain",
    "split_structure",
    "to_python",
]

MAX_CHARS = 2_000
"""Longest answer (after LaTeX conversion) the parser accepts."""
MAX_DEPTH = 40
"""Deepest bracket nesting accepted (``ast.parse`` itself fails near 200)."""
MAX_DIGITS = 200
"""Longest run of digits in one number."""


class MathParseError(ValueError):
    """The text is not a math answer this parser understands (or it exceeds a bound)."""


FUNCTIONS: dict[str, int] = {
    # name -> maximum number of arguments
    "sqrt": 1,
    "root": 2,
    "sin": 1,
    "cos": 1,
    "tan": 1,
    "cot": 1,
    "sec": 1,
    "csc": 1,
    "arcsin": 1,
    "arccos": 1,
    "arctan": 1,
    "asin": 1,
    "acos": 1,
    "atan": 1,
    "sinh": 1,
    "cosh": 1,
    "tanh": 1,
    "log": 2,
    "ln": 1,
    "exp": 1,
    "abs": 1,
    "factorial": 1,
    "binomial": 2,
    "floor": 1,
    "ceil": 1,
}
"""Functions an answer may call, with their arity limit."""

CONSTANTS = ("pi", "oo", "infty", "inf")
GREEK = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu "
    "xi omicron rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi "
    "Sigma Upsilon Phi Psi Omega"
).split()
_NAMES = sorted(set(FUNCTIONS) | set(CONSTANTS) | set(GREEK), key=len, reverse=True)

# LaTeX commands that are spacing or sizing only.
_DROP = {
    "left",
    "right",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "biggl",
    "biggr",
    "displaystyle",
    "textstyle",
    "quad",
    "qquad",
    "limits",
    "nolimits",
    "!",
    ",",
    ";",
    ":",
    " ",
    "middle",
}
_SIMPLE = {
    "cdot": "*",
    "times": "*",
    "ast": "*",
    "div": "/",
    "pi": " pi ",
    "infty": " oo ",
    "infinity": " oo ",
    "pm": " ± ",
    "mp": " ∓ ",
    "cup": " ∪ ",
    "in": " ∈ ",
    "lbrace": "{",
    "rbrace": "}",
    "{": "{",
    "}": "}",
    "langle": "(",
    "rangle": ")",
    "lvert": "|",
    "rvert": "|",
    "vert": "|",
    "mid": "|",
    "lfloor": " floor(",
    "rfloor": ")",
    "lceil": " ceil(",
    "rceil": ")",
    "neq": " ≠ ",
    "ne": " ≠ ",
    "le": " ≤ ",
    "leq": " ≤ ",
    "ge": " ≥ ",
    "geq": " ≥ ",
    "lt": "<",
    "gt": ">",
    "circ": "",
    "degree": "",
    "%": "",
    "$": "",
    "emptyset": " ∅ ",
    "varnothing": " ∅ ",
    "ln": " ln ",
    "log": " log ",
    "exp": " exp ",
}
_FUNCTION_COMMANDS = {
    "sin",
    "cos",
    "tan",
    "cot",
    "sec",
    "csc",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
}
_WRAPPER_COMMANDS = {"mathrm", "mathbf", "mathit", "operatorname", "boldsymbol", "mathsf", "bm"}
_DROPPED_ARG_COMMANDS = {"text", "textbf", "textit", "mbox", "textrm", "hbox"}
_FRACS = {"frac", "dfrac", "tfrac", "cfrac"}

_SUPERSCRIPTS = str.maketrans({"²": "^2", "³": "^3", "¹": "^1", "⁰": "^0", "⁴": "^4"})
_UNICODE = str.maketrans(
    {
        "−": "-",
        "–": "-",
        "×": "*",
        "·": "*",
        "⋅": "*",
        "÷": "/",
        "π": " pi ",
        "∞": " oo ",
        "≤": " ≤ ",
        "≥": " ≥ ",
        "√": " sqrt ",
        "°": "",
    }
)


def _check_depth(text: str) -> None:
    depth = 0
    for char in text:
        if char in "({[":
            depth += 1
            if depth > MAX_DEPTH:
                raise MathParseError(f"brackets nested deeper than {MAX_DEPTH}")
        elif char in ")}]":
            depth -= 1


class _Latex:
    """A one-pass recursive converter over a LaTeX string (depth already bounded)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str) -> MathParseError:
        return MathParseError(f"{message} at position {self.pos}")

    def command(self) -> str:
        """Read ``\\name`` (or ``\\`` + one symbol) after the backslash."""
        match = re.compile(r"[A-Za-z]+|.").match(self.text, self.pos)
        if match is None:
            raise self.error("dangling backslash")
        self.pos = match.end()
        return match.group(0)

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def argument(self, single: bool = False) -> str:
        """A ``{group}`` or one token, converted; ``single``: one character (``\\frac12``)."""
        self.skip_space()
        if self.pos >= len(self.text):
            raise self.error("missing argument")
        char = self.text[self.pos]
        if char == "{":
            self.pos += 1
            inner = self.until("}")
            return inner
        if char == "\\":
            self.pos += 1
            return self.convert_command(self.command())
        # Plain-text exponents ("2^10", "x^-1") mean the whole number, not one digit.
        match = re.compile(r"[-+]?\s*(?:\d+(?:\.\d+)?|[A-Za-z])").match(self.text, self.pos)
        if match is not None and not single:
            self.pos = match.end()
            return match.group(0)
        self.pos += 1
        return char

    def optional(self) -> str | None:
        self.skip_space()
        if self.pos < len(self.text) and self.text[self.pos] == "[":
            self.pos += 1
            return self.until("]")
        return None

    def until(self, close: str | None) -> str:
        """Convert up to the matching ``close`` (consumed), or to the end."""
        out: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if close is not None and char == close:
                self.pos += 1
                return "".join(out)
            self.pos += 1
            if char == "\\":
                out.append(self.convert_command(self.command()))
            elif char == "{":
                out.append("(" + self.until("}") + ")")
            elif char == "}":
                raise self.error("unbalanced '}'")
            elif char == "^":
                out.append("**(" + self.argument() + ")")
            elif char == "_":
                sub = self.argument().replace(" ", "").strip("()")
                if not re.fullmatch(r"[A-Za-z0-9]{1,8}", sub):
                    raise self.error("subscript must be letters or digits")
                out.append("_" + sub)
            else:
                out.append(char)
        if close is not None:
            raise self.error(f"missing {close!r}")
        return "".join(out)

    def convert_command(self, name: str) -> str:
        if name in _DROP:
            return " "
        if name in _FRACS:
            num = self.argument(single=True)
            den = self.argument(single=True)
            return f"(({num})/({den}))"
        if name == "sqrt":
            index = self.optional()
            body = self.argument(single=True)
            return f" sqrt({body})" if index is None else f" root({body},{index})"
        if name == "binom" or name == "dbinom" or name == "tbinom":
            top = self.argument(single=True)
            bottom = self.argument(single=True)
            return f" binomial({top},{bottom})"
        if name in _WRAPPER_COMMANDS:
            return " " + self.argument() + " "
        if name in _DROPPED_ARG_COMMANDS:
            self.argument()
            return " "
        if name in _FUNCTION_COMMANDS:
            return f" {name} "
        if name in _SIMPLE:
            return _SIMPLE[name]
        if name in GREEK:
            return f" {name} "
        raise self.error(f"unsupported LaTeX command \\{name}")


def latex_to_plain(text: str) -> str:
    """Convert LaTeX/Unicode notation into plain math with ``**`` powers and ``()`` groups.

    Raises:
        MathParseError: unsupported command, unbalanced braces, or a bound exceeded.
    """
    if len(text) > MAX_CHARS:
        raise MathParseError(f"answer longer than {MAX_CHARS} characters")
    text = unicodedata.normalize("NFKC", text.translate(_SUPERSCRIPTS)).translate(_UNICODE)
    text = text.replace("\n", " ").replace("\t", " ").replace("~", " ")
    text = re.sub(r"\^\s*\{?\s*\\circ\s*\}?", "", text)
    text = text.replace("{,}", "").replace("\\%", "").replace("%", "").replace("\\$", "")
    _check_depth(text)
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        stripped = text.strip()
        if stripped.startswith(left) and stripped.endswith(right) and len(stripped) > 2 * len(left):
            text = stripped[len(left) : -len(right)]
    try:
        plain = _Latex(text).until(None)
    except RecursionError:  # "\\sqrt\\sqrt\\sqrt..." nests without braces
        raise MathParseError("LaTeX commands nested too deeply") from None
    if len(plain) > 4 * MAX_CHARS:
        raise MathParseError("answer expands to too much text")
    _check_depth(plain)
    return plain


# -- structure ----------------------------------------------------------------------------


@dataclass
class Piece:
    """A parsed answer's shape; expressions are Python expression strings (see to_python)."""

    kind: str
    """``expr``, ``eq`` (items: lhs, rhs), ``tuple``, ``set``, ``list``, ``interval`` or
    ``union`` (items: intervals), ``empty``."""
    items: list[Piece] = field(default_factory=list)
    text: str = ""
    """For ``expr``: the plain expression text."""
    closed: tuple[bool, bool] = (False, False)
    """For ``interval``: whether the left/right ends are included."""


def _split_top(text: str, seps: str) -> list[str]:
    """Split at ``seps`` characters that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char in seps and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _wrapped(text: str, left: str, right: str) -> bool:
    """``text`` is one bracketed group from its first to its last character."""
    if not (text.startswith(left) and text.endswith(right)):
        return False
    depth = 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0 and index != len(text) - 1:
                return False
    return True


_THOUSANDS = re.compile(r"^\s*-?\d{1,3}(?:,\d{3})+(?:\.\d+)?\s*$")


def split_structure(plain: str) -> Piece:
    """The shape of a plain-math answer: equation, interval, tuple, set, list, expression.

    Raises:
        MathParseError: relations other than ``=`` (``<``, ``≤`` ...), or an empty piece.
    """
    text = plain.strip().rstrip(".").strip()
    if not text:
        raise MathParseError("empty answer")
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    if text in ("∅",) or text.replace(" ", "") in ("{}", "()"):
        return Piece("empty")
    if any(rel in text for rel in ("≤", "≥", "<", ">", "≠")):
        raise MathParseError("inequalities are not supported; give the value or interval")
    if "∈" in text:
        text = text.split("∈")[-1].strip()
    unions = _split_top(text, "∪")
    if len(unions) > 1:
        members = [split_structure(part) for part in unions]
        for member in members:
            if member.kind == "tuple" and len(member.items) == 2:
                member.kind = "interval"  # "(a, b) ∪ ..." : open intervals
        return Piece("union", members)
    eq_parts = _split_top(text, "=")
    if len(eq_parts) > 1:
        lhs, rhs = eq_parts[0].strip(), eq_parts[-1].strip()
        if not lhs or not rhs:
            raise MathParseError("'=' with nothing on one side")
        commas = _split_top(rhs, ",")
        if len(commas) > 1 and not _wrapped(rhs, "(", ")"):
            # "x = 1, 2" lists the solutions of x.
            return Piece("list", [split_structure(c) for c in commas])
        return Piece("eq", [_expr_or_structure(lhs), _expr_or_structure(rhs)])
    return _expr_or_structure(text)


def _expr_or_structure(text: str) -> Piece:
    text = text.strip()
    if not text:
        raise MathParseError("empty expression")
    if _wrapped(text, "{", "}"):
        inner = text[1:-1].strip()
        return Piece(
            "set", [_expr_or_structure(p) for p in _split_top(inner, ",")] if inner else []
        )
    opens, closes = "([", ")]"
    if text[0] in opens and text[-1] in closes:
        inner = text[1:-1]
        # "(a, b]" is only a group when brackets match as one unit.
        parts = _split_top(inner, ",")
        balanced = _balanced(inner)
        if balanced and len(parts) == 2 and (text[0] == "[" or text[-1] == "]"):
            return Piece(
                "interval",
                [_expr_or_structure(parts[0]), _expr_or_structure(parts[1])],
                closed=(text[0] == "[", text[-1] == "]"),
            )
        if balanced and len(parts) >= 2 and text[0] == "(" and text[-1] == ")":
            return Piece("tuple", [_expr_or_structure(p) for p in parts])
    parts = _split_top(text, ",")
    if len(parts) > 1:
        return Piece("list", [_expr_or_structure(p) for p in parts])
    if "±" in text or "∓" in text:
        plus = text.replace("±", "+", 1).replace("∓", "-", 1)
        minus = text.replace("±", "-", 1).replace("∓", "+", 1)
        return Piece("list", [_expr_or_structure(plus), _expr_or_structure(minus)])
    return Piece("expr", text=text)


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


# -- tokens -> Python expression ---------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?|\.\d+)|(?P<name>[A-Za-z]+(?:_[A-Za-z0-9]+)?)"
    r"|(?P<op>\*\*|[-+*/^!|(),\[\]]))"
)


def _split_letters(word: str) -> list[str]:
    """``"2xy"`` reads as 2*x*y: split a letter run into known names and single letters.

    A run of four or more letters that is not made of known names is a word, and prose is
    not a math answer ("the square root of two" must not parse as a product of symbols).
    """
    if "_" in word:
        head, _, sub = word.partition("_")
        parts = _split_letters(head)
        parts[-1] = parts[-1] + "_" + sub
        return parts
    out: list[str] = []
    index = 0
    while index < len(word):
        for name in _NAMES:
            if word.startswith(name, index):
                out.append(name)
                index += len(name)
                break
        else:
            out.append(word[index])
            index += 1
    run = longest = 0
    for part in out:
        run = run + 1 if len(part) == 1 else 0
        longest = max(longest, run)
    if longest >= 4:
        raise MathParseError(f"'{word}' looks like a word, not math")
    return out


def _number(text: str) -> str:
    """A decimal as an exact ratio of integers: ``0.25`` -> ``(25/100)``."""
    digits = text.replace(".", "")
    if len(digits) > MAX_DIGITS:
        raise MathParseError(f"number with more than {MAX_DIGITS} digits")
    if "." not in text:
        return str(int(text))
    whole, _, frac = text.partition(".")
    if not frac:
        return str(int(whole or "0"))
    return f"({int(whole or '0') * 10 ** len(frac) + int(frac)}/{10 ** len(frac)})"


def to_python(expr: str) -> str:
    """Tokenise a plain-math expression and emit Python source with explicit ``*``.

    Implicit multiplication (``2x``, ``2(x+1)``, ``(a)(b)``, ``x sqrt(2)``) is made explicit,
    ``^`` becomes ``**``, ``|x|`` becomes ``abs(x)``, ``n!`` becomes ``factorial(n)``, a
    function name without parentheses takes the next factor (``sin x`` -> ``sin(x)``).

    Raises:
        MathParseError: a character or name outside the grammar.
    """
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if match is None:
            if expr[pos:].strip() == "":
                break
            raise MathParseError(f"unexpected character {expr[pos]!r}")
        pos = match.end()
        if match.group("num") is not None:
            tokens.append(("num", _number(match.group("num"))))
        elif match.group("name") is not None:
            for name in _split_letters(match.group("name")):
                kind = "func" if name in FUNCTIONS else "name"
                tokens.append((kind, name))
        else:
            op = match.group("op")
            tokens.append(("op", "**" if op == "^" else op))
    if not tokens:
        raise MathParseError("empty expression")
    return _emit(tokens)


def _emit(tokens: list[tuple[str, str]]) -> str:
    out: list[str] = []
    bars: list[int] = []  # output positions of open '|'
    depth = 0

    def ends_operand() -> bool:
        if not out:
            return False
        last = out[-1]
        return last not in ("+", "-", "*", "/", "**", "(", ",") and not last.endswith("(")

    index = 0
    while index < len(tokens):
        kind, value = tokens[index]
        starts_operand = kind in ("num", "name", "func") or value in ("(", "[")
        if value == "|":
            if bars and ends_operand():
                bars.pop()
                out.append(")")
                depth -= 1
                index += 1
                continue
            starts_operand = True
        if starts_operand and ends_operand():
            out.append("*")
        if kind == "func":
            nxt = tokens[index + 1] if index + 1 < len(tokens) else None
            if nxt is not None and nxt[1] in ("(", "["):
                out.append(value + "(")
                depth += 1
                index += 2
                continue
            if nxt is None:
                raise MathParseError(f"function {value} without an argument")
            if nxt[1] == "**":
                # "\sin^2 x" / "\sin^{2}(x)": the power applies to the function's value.
                exp_end = _atom_end(tokens, index + 2)
                arg_end = _atom_end(tokens, exp_end)
                power = _emit(tokens[index + 2 : exp_end])
                argument = _emit(tokens[exp_end:arg_end])
                out.append(f"( {value}( {argument} ) ) ** ( {power} )")
                index = arg_end
                continue
            # Bare function: its argument is the next factor (with an optional power).
            if nxt[0] == "func" or nxt[1] in (")", "]", "|", "+", "-", "*", "/", "**", ",", "!"):
                raise MathParseError(f"write {value}(...) with parentheses")
            end = _atom_end(tokens, index + 1)
            if end < len(tokens) and tokens[end][1] == "**":
                end = _atom_end(tokens, end + 1)
            out.append(value + "(")
            out.append(_emit(tokens[index + 1 : end]))
            out.append(")")
            index = end
            continue
        if value == "|":
            out.append("abs(")
            bars.append(len(out))
            depth += 1
        elif value in ("(", "["):
            out.append("(")
            depth += 1
        elif value in (")", "]"):
            out.append(")")
            depth -= 1
            if depth < 0:
                raise MathParseError("unbalanced ')'")
        elif value == "!":
            # n! -> factorial(n): wrap the preceding operand.
            start = _operand_start(out)
            out[start:] = ["factorial(", *out[start:], ")"]
        else:
            out.append(value)
        index += 1
    if bars or depth != 0:
        raise MathParseError("unbalanced brackets or '|'")
    return " ".join(out)


def _atom_end(tokens: list[tuple[str, str]], start: int) -> int:
    """Index just past the atom (a token, or a bracketed group) starting at ``start``."""
    if start >= len(tokens):
        raise MathParseError("missing operand")
    if tokens[start][1] == "-":
        return _atom_end(tokens, start + 1)
    if tokens[start][1] not in ("(", "["):
        return start + 1
    depth = 0
    for index in range(start, len(tokens)):
        if tokens[index][1] in ("(", "["):
            depth += 1
        elif tokens[index][1] in (")", "]"):
            depth -= 1
            if depth == 0:
                return index + 1
    raise MathParseError("unbalanced brackets")


def _operand_start(out: list[str]) -> int:
    """Index in ``out`` where the operand ending at the last element starts."""
    if not out:
        raise MathParseError("'!' without an operand")
    if out[-1] != ")":
        if out[-1] in ("+", "-", "*", "/", "**", ","):
            raise MathParseError("'!' without an operand")
        return len(out) - 1
    depth = 0
    for index in range(len(out) - 1, -1, -1):
        token = out[index]
        if token == ")":
            depth += 1
        elif token.endswith("("):
            depth -= 1
            if depth == 0:
                return index
    raise MathParseError("unbalanced brackets before '!'")
