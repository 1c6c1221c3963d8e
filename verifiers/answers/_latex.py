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
    "MIN_ARGS",
    "PCT",
    "fold_scripts",
    "latex_to_plain",
    "normalize_words",
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
    "matrix": 30,
    "mrow": 30,
    "det": 1,
    "summation": 4,
    "product": 4,
    "integral": 4,
    "limit": 4,
}
"""Functions an answer may call, with their arity limit (``matrix``/``mrow`` are what
``\\begin{pmatrix}`` rows become)."""

MIN_ARGS: dict[str, int] = {
    "binomial": 2,
    "summation": 4,
    "product": 4,
    "integral": 4,
    "limit": 4,
}
"""Functions that need more than one argument (``binomial(7)`` is the model's error)."""

PCT = "\ue000"
"""Marks a percent sign (``%``, ``\\%``, "percent", "pct") until the structure is known."""
TEXT_OPEN, TEXT_CLOSE = "\ue001", "\ue002"
"""Bracket the content of ``\\text{...}`` until the structure is known."""

CONSTANTS = ("pi", "oo", "infty", "infinity", "inf", "dots", "idx")
"""``dots`` is what ``\\dots``/``\\ldots``/``\\cdots``/``...`` in a list or sequence become: one
opaque element (``1, 2, \\ldots, n`` equals ``1, 2, \\dots, n`` and nothing with other
elements); it is never a product of letters."""
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
    "(",
    ")",
    "[",
    "]",
    "ldotp",
}
_DOTS = {"dots", "ldots", "cdots", "dotsc", "dotsb", "dotsm", "vdots", "ddots", "hdots"}
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
    "leqslant": " ≤ ",
    "geqslant": " ≥ ",
    "approx": " ≈ ",
    "simeq": " ≈ ",
    "colon": ":",
    "ne": " ≠ ",
    "le": " ≤ ",
    "leq": " ≤ ",
    "ge": " ≥ ",
    "geq": " ≥ ",
    "lt": "<",
    "gt": ">",
    "circ": "",
    "degree": "",
    "%": PCT,
    "$": "",
    "euro": "",
    "pounds": "",
    "yen": "",
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
_WRAPPER_COMMANDS = {"mathbf", "mathit", "operatorname", "boldsymbol", "mathsf", "bm"}
_TEXT_COMMANDS = {"text", "textbf", "textit", "mbox", "textrm", "hbox", "textnormal", "textsf"}
_MATRIX_ENVS = {
    "pmatrix",
    "bmatrix",
    "Bmatrix",
    "matrix",
    "smallmatrix",
    "array",
    "vmatrix",
}
"""``vmatrix`` is a determinant (``|a b; c d|``): it reads as ``det(...)`` of the matrix."""
_BIG_OPERATORS = {"sum": "summation", "prod": "product", "int": "integral", "lim": "limit"}
_LIMIT_POINT = re.compile(
    r"\s*\(?\s*([A-Za-z])\s*(?:\\to|\\rightarrow|\\longrightarrow|->|→)\s*(.+?)\s*\)?\s*$", re.S
)
"""``x \\to a`` under a ``\\lim`` (``a`` may end in ``^+`` or ``^-``: a one-sided limit)."""
_RELATION_COMMAND = re.compile(r"\\(?:le|ge|leq|geq|neq|ne|lt|gt|leqslant|geqslant)(?![A-Za-z])")
_DIFFERENTIAL = re.compile(
    r"(?<![A-Za-z\\])(?:\\mathrm\s*\{\s*d\s*\}|\\operatorname\s*\{\s*d\s*\}|d)\s*([A-Za-z])(?![A-Za-z])"
)
"""The ``dx`` (``\\,dx``, ``\\mathrm{d}x``) that closes an integral's body."""
_LETTER_RUN = re.compile(r"[A-Za-z]+(?:_[A-Za-z0-9]+)?")


def _rename_index(body: str, letter: str) -> str:
    """The bound index ``letter`` of a sum, product or integral as the reserved name ``idx``
    in converted ``body`` (letter runs are split as the tokenizer splits them)."""

    def one(match: re.Match[str]) -> str:
        run = match.group(0)
        head, _, sub = run.partition("_")
        parts = _split_letters(head, strict=False) if head else []
        parts = ["idx" if part == letter else part for part in parts]
        if sub:
            if sub == letter:
                sub = "idx"
            elif sub.startswith("X"):  # an expression subscript (F_{n-k-1})
                sub = "X" + sub[1:].replace(letter, "idx")
            parts[-1] = parts[-1] + "_" + sub
        return " " + " ".join(parts) + " "

    return _LETTER_RUN.sub(one, body)


_SPACING_PREFIXES = ("qquad", "quad")
_GEOMETRY_MARKS = {
    "angle",
    "measuredangle",
    "triangle",
    "overline",
    "overarc",
    "widehat",
    "overrightarrow",
    "overleftarrow",
    "overleftrightarrow",
    "vec",
    "hat",
    "bar",
    "tilde",
    "widetilde",
}
"""``\\angle ABC``, ``\\overline{AB}``, ``\\overrightarrow{AB}``, ``\\vec v``, ``\\hat{i}``: names of
geometric objects and vectors; the mark is dropped and the name stays (it is usually the left
side of a naming equation)."""
_FRACS = {"frac", "dfrac", "tfrac", "cfrac"}

_SUPER = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻"
_SUB = "₀₁₂₃₄₅₆₇₈₉"
_SUPER_RUN = re.compile(f"[{_SUPER}]+")
_SUB_RUN = re.compile(f"[{_SUB}]+")
_SUPER_PLAIN = str.maketrans(_SUPER, "0123456789+-")
_SUB_PLAIN = str.maketrans(_SUB, "0123456789")


def fold_scripts(text: str) -> str:
    """``2⁵`` is two to the fifth, never 25; ``x₁₀`` is ``x_{10}``: a reader sees a power.

    NFKC alone folds ``⁵`` to ``5`` (so ``1²`` would read as ``12``); runs of superscript and
    subscript characters become one ``^{...}`` / ``_{...}`` first."""
    text = _SUPER_RUN.sub(lambda m: "^{" + m.group(0).translate(_SUPER_PLAIN) + "}", text)
    return _SUB_RUN.sub(lambda m: "_{" + m.group(0).translate(_SUB_PLAIN) + "}", text)


_UNICODE = str.maketrans(
    {
        "−": "-",
        "–": "-",
        "‐": "-",
        "‑": "-",
        "‒": "-",
        "—": "-",
        "﹣": "-",
        "－": "-",
        "≈": " ≈ ",
        "≠": " ≠ ",
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
        "€": " ",
        "£": " ",
        "¥": " ",
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


_SUBSCRIPT_OPS = str.maketrans({"+": "P", "-": "M", "*": "T"})
"""How an expression subscript (``F_{n-k-1}``) becomes one name (``F_Xn M k M 1`` without the
spaces): an opaque symbol, equal only to the same subscript written the same way."""


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
        name = match.group(0)
        if name not in _KNOWN_COMMANDS:
            # "\\quadx" (no space after the spacing command) is "\\quad x".
            for prefix in _SPACING_PREFIXES:
                if name.startswith(prefix):
                    name = prefix
                    break
        self.pos = match.start() + len(name)
        return name

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
                    # "F_{n-k-1}": an index written as an expression names one symbol.
                    encoded = sub.translate(_SUBSCRIPT_OPS)
                    if not re.fullmatch(r"[A-Za-z0-9]{1,16}", encoded):
                        raise self.error("subscript must be letters, digits, + or -")
                    sub = "X" + encoded
                out.append("_" + sub)
            else:
                out.append(char)
        if close is not None:
            raise self.error(f"missing {close!r}")
        return "".join(out)

    def environment(self) -> str:
        """``\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}`` -> ``matrix(mrow(a,b),mrow(c,d))``."""
        match = re.compile(r"\s*\{([A-Za-z]+\*?)\}").match(self.text, self.pos)
        if match is None or match.group(1) not in _MATRIX_ENVS:
            raise self.error("unsupported environment (only matrices are understood)")
        env = match.group(1)
        self.pos = match.end()
        if env == "array":
            spec = re.compile(r"\s*\{[lcr| ]*\}").match(self.text, self.pos)
            if spec is None:
                raise self.error("array needs a column spec")
            self.pos = spec.end()
        end_tag = "\\end{" + env + "}"
        end = self.text.find(end_tag, self.pos)
        if end < 0 or "\\begin" in self.text[self.pos : end]:
            raise self.error(f"unclosed or nested {env}")
        body = self.text[self.pos : end]
        self.pos = end + len(end_tag)
        rows = [row for row in body.split("\\\\") if row.strip()]
        if not rows:
            raise self.error("empty matrix")
        out = []
        for row in rows:
            cells = [_Latex(cell).until(None).strip() for cell in row.split("&")]
            if any(not cell for cell in cells):
                raise self.error("empty matrix cell")
            out.append("mrow(" + ",".join(f"({cell})" for cell in cells) + ")")
        if env == "vmatrix":
            return " det(matrix(" + ",".join(out) + ")) "
        return " matrix(" + ",".join(out) + ") "

    def big_operator(self, name: str) -> str:
        """``\\sum_{k=1}^{n} body`` / ``\\prod``: the body runs to the next ``+``/``-``/``=``/
        ``,``/relation outside brackets (``\\sum_{k=1}^{n} k + 1`` is the sum plus one).
        ``\\int_a^b body\\,dx``: a definite integral, the body runs to its ``dx``. The index
        becomes the reserved name ``idx`` in the body (so ``\\sum_i i^2`` is no sum of
        ``(sqrt(-1))^2``), subscripts included (``F_{n-k}``)."""
        self.skip_space()
        if name == "int":
            return self.integral()
        if name == "lim":
            return self.limit()
        if not self.text.startswith("_", self.pos):
            raise self.error(f"\\{name} needs limits: \\{name}_{{k=1}}^{{n}}")
        self.pos += 1
        lower = self.argument()
        bound = re.fullmatch(r"\s*\(?\s*([A-Za-z])\s*=\s*(.+?)\s*\)?\s*", lower)
        if bound is None:
            raise self.error(f"\\{name} limits must read k=a")
        self.skip_space()
        if not self.text.startswith("^", self.pos):
            raise self.error(f"\\{name} needs an upper limit")
        self.pos += 1
        upper = self.argument()
        body = self.body()
        func = _BIG_OPERATORS[name]
        body = _rename_index(body, bound.group(1))
        return f" {func}(({body}),idx,({bound.group(2)}),({upper})) "

    def limit(self) -> str:
        """``\\lim_{x \\to a} body``: the body runs as a sum's does."""
        if not self.text.startswith("_", self.pos):
            raise self.error("\\lim needs its point: \\lim_{x \\to a}")
        self.pos += 1
        self.skip_space()
        if not self.text.startswith("{", self.pos):
            raise self.error("\\lim_{x \\to a} needs braces")
        end = self.text.find("}", self.pos)
        raw = self.text[self.pos + 1 : end] if end > 0 else ""
        point = _LIMIT_POINT.match(raw)
        if end < 0 or point is None:
            raise self.error("\\lim limits must read x \\to a")
        self.pos = end + 1
        where = point.group(2).strip()
        side = "0"
        one_sided = re.fullmatch(r"(.+?)\s*\^\s*\{?\s*([+-])\s*\}?", where)
        if one_sided is not None:
            where, side = one_sided.group(1), "1" if one_sided.group(2) == "+" else "-1"
        at = _Latex(where).until(None)
        body = self.body()
        body = _rename_index(body, point.group(1))
        return f" limit(({body}),idx,({at}),{side}) "

    def body(self) -> str:
        """A big operator's body: to the next top-level ``+``/``-``/``=``/``,``/relation."""
        start = self.pos
        depth = 0
        end = start
        while end < len(self.text):
            char = self.text[end]
            if char in "([{":
                depth += 1
            elif char in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif char == "\\":
                if depth == 0 and _RELATION_COMMAND.match(self.text, end):
                    break
                end += 2
                continue
            elif depth == 0 and char in "+-=,<>≤≥≠;" and end > start:
                if self.text[start:end].strip():
                    break
            end += 1
        body = _Latex(self.text[start:end]).until(None)
        self.pos = end
        if not body.strip():
            raise self.error("an operator without a body")
        return body

    def integral(self) -> str:
        limits: list[str] = []
        for mark in ("_", "^"):
            self.skip_space()
            if self.text.startswith(mark, self.pos):
                self.pos += 1
                limits.append(self.argument())
        if len(limits) != 2:
            raise self.error("only definite integrals \\int_a^b f(x)\\,dx are understood")
        differential = _DIFFERENTIAL.search(self.text, self.pos)
        if differential is None:
            raise self.error("an integral needs its dx")
        body = _Latex(self.text[self.pos : differential.start()]).until(None)
        self.pos = differential.end()
        if not body.strip():
            raise self.error("\\int without a body")
        body = _rename_index(body, differential.group(1))
        return f" integral(({body}),idx,({limits[0]}),({limits[1]})) "

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
        if name in _GEOMETRY_MARKS:
            if name in ("angle", "measuredangle", "triangle"):
                return " "
            return " " + self.argument() + " "
        if name == "mathrm":
            # \\mathrm{e}, \\mathrm{d}: one letter or a known name is math; words are text.
            inner = self.argument()
            if inner.strip() in _NAMES or len(inner.strip()) <= 1:
                return " " + inner + " "
            return TEXT_OPEN + inner + TEXT_CLOSE
        if name in _TEXT_COMMANDS:
            return TEXT_OPEN + self.argument() + TEXT_CLOSE
        if name == "mathbb":
            inner = self.argument().strip()
            if inner == "R":
                return " (-oo, oo) "
            raise self.error(f"unsupported set \\mathbb{{{inner}}}")
        if name == "begin":
            return self.environment()
        if name in _BIG_OPERATORS:
            return self.big_operator(name)
        if name in _DOTS:
            return " dots "
        if name in _FUNCTION_COMMANDS:
            return f" {name} "
        if name == "log" and self.text.startswith("_", self.pos):
            # \\log_2 8, \\log_{b}(x+1): logarithm to a base.
            self.pos += 1
            base = self.argument()
            self.skip_space()
            if self.text.startswith("(", self.pos):
                self.pos += 1
                body = self.until(")")
            else:
                body = self.argument()
            return f" log(({body}),({base})) "
        if name in _SIMPLE:
            return _SIMPLE[name]
        if name in GREEK:
            return f" {name} "
        raise self.error(f"unsupported LaTeX command \\{name}")


_KNOWN_COMMANDS = (
    _DROP
    | set(_SIMPLE)
    | _FUNCTION_COMMANDS
    | _WRAPPER_COMMANDS
    | _TEXT_COMMANDS
    | _FRACS
    | set(GREEK)
    | _GEOMETRY_MARKS
    | _DOTS
    | set(_BIG_OPERATORS)
    | {"sqrt", "binom", "dbinom", "tbinom", "mathrm", "mathbb", "begin", "end"}
)

# MATH-style thousands separators: "16,\!386.20", "11,\! 111,\! 100", "14{,}912", "1\,000".
_THOUSANDS_SEP = re.compile(r"(?<=\d)\s?(?:,\\!\s*|\{\s*,\s*\}|\\,)(?=\d{3}(?!\d))")
# "3{,}5": LaTeX's decimal comma (a thousands "{,}" has three digits after it, see above).
_DECIMAL_BRACE_COMMA = re.compile(r"(?<=\d)\{\s*,\s*\}(?=\d)")
# "1, 2, ..., n" (and "…", which NFKC makes "..."): the ellipsis element.
_PLAIN_DOTS = re.compile(r"(?<!\.)\.\.\.(?!\.)")
_PERCENT_WORD = re.compile(
    r"\\text\s*\{\s*(?:percentage|percent|pct)\s*\}|(?<![A-Za-z\\])(?:percentage|percent|pct)"
    r"(?![A-Za-z])"
)
# "6 and 8", "2 or 3", "(11,7)or(7,11)", ", and": connectives separate answers.
_CONNECTIVE = re.compile(r"(?:,\s*)?(?<![A-Za-z\\])(?:and|or)(?![A-Za-z])(?:\s*,)?")
_BARE_SET = re.compile(r"^\s*\{")
_DOUBLE_ESCAPE = re.compile(r"\\\\(?=[A-Za-z(\[{}])")
# "6.62607015e-34", "1E5": scientific notation (a decimal mantissa or a capital E), not e.
_SCIENTIFIC = re.compile(r"(?<![\w.])(\d+\.\d+|\d+(?=E))[eE]([+-]?\d{1,3})(?![\w.])")


# "0.\overline{3}", "1.2\overline{45}": repeating decimals, made exact fractions.
_REPEATING = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\overline\s*\{(\d{1,20})\}")
# "2\frac{1}{2}" (a mixed number, as MATH writes it and Math-Verify reads it) is 5/2.
_MIXED = re.compile(r"(?<![\w.}^_])(\d{1,6})\s*\\[dt]?frac\s*\{(\d{1,6})\}\s*\{(\d{1,6})\}")
_TRIG = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![A-Za-z])")
_DEGREES = re.compile(r"(\d+(?:\.\d+)?)\s*\^\s*\{?\s*\\circ\s*\}?")
# "\tan^{-1} 2" is arctan 2, not 1/tan 2.
_INVERSE_TRIG = re.compile(r"\\(sin|cos|tan)\s*\^\s*\{?\s*-\s*1\s*\}?")


def _repeating(match: re.Match[str]) -> str:
    whole, fixed, cycle = match.group(1) or "0", match.group(2), match.group(3)
    if len(whole) + len(fixed) > MAX_DIGITS:
        raise MathParseError(f"number with more than {MAX_DIGITS} digits")
    numerator = int(whole + fixed + cycle) - int(whole + fixed)
    denominator = 10 ** len(fixed) * (10 ** len(cycle) - 1)
    return f"\\frac{{{numerator}}}{{{denominator}}}"


def _bare_braces_as_set(text: str) -> str:
    """``{1, 2, 3}`` written without backslashes is a set (a LaTeX group never holds a
    top-level comma in a math answer)."""
    if not _BARE_SET.match(text):
        return text
    stripped = text.strip()
    if not stripped.endswith("}") or not _wrapped(stripped, "{", "}"):
        return text
    if len(_split_top(stripped[1:-1], ",;")) < 2:
        return text
    return "\\{" + stripped[1:-1] + "\\}"


def latex_to_plain(text: str) -> str:
    r"""Convert LaTeX/Unicode notation into plain math with ``**`` powers and ``()`` groups.

    Before conversion, what a reader sees is made explicit: superscript digits are powers,
    dash-like characters are minus signs, ``$`` delimiters are dropped, MATH thousands
    separators (``16,\!386``) join their digits, percent words become ``%`` and "and"/"or"
    become separators.

    Raises:
        MathParseError: unsupported command, unbalanced braces, or a bound exceeded.
    """
    if len(text) > MAX_CHARS:
        raise MathParseError(f"answer longer than {MAX_CHARS} characters")
    text = unicodedata.normalize("NFKC", fold_scripts(text).replace("°", "^\\circ"))
    text = text.translate(_UNICODE)
    text = text.replace("\n", " ").replace("\t", " ").replace("~", " ")
    if _TRIG.search(text):
        # "\sin 60^\circ" is the sine of 60 degrees: inside a trigonometric answer a degree
        # value is converted to radians (elsewhere "30^\circ" is the number 30).
        text = _DEGREES.sub(r"(\1\\pi/180)", text)
    text = re.sub(r"\^\s*\{?\s*\\circ\s*\}?", "", text)
    if "\\begin" not in text:
        # Doubly escaped LaTeX from JSON-escaped data ("\\\\frac", "\\\\left("): one backslash
        # (inside a matrix "\\\\" separates rows, so matrices are left alone).
        text = _DOUBLE_ESCAPE.sub("\\\\", text)
    text = text.replace("\\$", "").replace("$", " ")
    text = _THOUSANDS_SEP.sub("", text)
    text = _SCIENTIFIC.sub(r"\1\\times 10^{\2}", text)
    text = _REPEATING.sub(_repeating, text)
    text = _MIXED.sub(r"(\1+\\frac{\2}{\3})", text)
    text = _INVERSE_TRIG.sub(r"\\arc\1", text)
    text = _DECIMAL_BRACE_COMMA.sub(".", text)
    text = text.replace("{,}", ",")
    text = _PLAIN_DOTS.sub(" dots ", text)
    text = _PERCENT_WORD.sub("%", text)
    text = text.replace("\\%", PCT).replace("%", PCT)
    text = text.replace("!=", " ≠ ").replace(">=", " ≥ ").replace("<=", " ≤ ")
    text = text.replace("\\not=", " ≠ ").replace("\\not =", " ≠ ")
    text = _CONNECTIVE.sub(" , ", text)
    text = _bare_braces_as_set(text)
    _check_depth(text)
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
    """``expr``, ``eq`` (items: lhs, rhs), ``rel`` (items: the chain's sides, ``ops``: its
    relations), ``tuple``, ``set``, ``list``, ``system`` (equations naming different
    unknowns), ``interval`` or ``union`` (items: intervals), ``text``, ``empty``."""
    items: list[Piece] = field(default_factory=list)
    text: str = ""
    """For ``expr``: the plain expression text; for ``text``: the normalised words."""
    closed: tuple[bool, bool] = (False, False)
    """For ``interval``: whether the left/right ends are included."""
    ops: tuple[str, ...] = ()
    """For ``rel``: the relations between consecutive items (``<``, ``≤``, ``≠``)."""
    percent: bool = False
    """For ``expr``: written with a percent sign."""
    base: int = 0
    """For ``expr``: a base-n numeral (``204_5``); 0 for ordinary numbers."""


def _split_top(text: str, seps: str) -> list[str]:
    """Split at ``seps`` characters that are not inside brackets."""
    return _split_top_at(text, seps)[0]


def _split_top_at(text: str, seps: str) -> tuple[list[str], list[str]]:
    """``(parts, separators)``: ``text`` split at ``seps`` characters outside brackets."""
    parts: list[str] = []
    found: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char in seps:
            parts.append(text[start:index])
            found.append(char)
            start = index + 1
    parts.append(text[start:])
    return parts, found


def _wrapped(text: str, left: str, right: str) -> bool:
    """``text`` is one bracketed group from its first to its last character."""
    if not (text.startswith(left) and text.endswith(right)):
        return False
    closed_at = _bracket_walk(text)[0]
    return closed_at is None or closed_at == len(text) - 1


def _bracket_walk(text: str) -> tuple[int | None, int, int]:
    """``(first index where a closing bracket returns to depth 0, lowest depth, final depth)``.

    One pass over ``text`` serving :func:`_wrapped` and :func:`_balanced`.
    """
    closed_at: int | None = None
    lowest = depth = 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
            continue
        if char not in ")]}":
            continue
        depth -= 1
        lowest = min(lowest, depth)
        if depth == 0 and closed_at is None:
            closed_at = index
    return closed_at, lowest, depth


_THOUSANDS = re.compile(r"^\s*-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?\s*$")
_TEXT_SEGMENT = re.compile(f"{TEXT_OPEN}([^{TEXT_OPEN}{TEXT_CLOSE}]*){TEXT_CLOSE}")
_TEXT_POWER = re.compile(
    f"{TEXT_OPEN}([^{TEXT_OPEN}{TEXT_CLOSE}]*){TEXT_CLOSE}(?:\\s*\\*\\*\\s*\\(\\s*\\d\\s*\\))?"
)
"""A text segment with an optional power after it (``\\text{ cm}^2``: the unit's power)."""
_WORDS_ONLY = re.compile(r"^[A-Za-z][A-Za-z '\-]*$")
_CHOICE = re.compile(r"^\(?\s*([A-Za-z]|\d+)\s*\)?$")
_RELATIONS = "≤≥<>≠"
_BASE_NUMERAL = re.compile(r"^\s*\(?([0-9][0-9A-Za-z]*)\)?\s*_\s*\(?(\d{1,2})\)?\s*$")
_SHORT_UNITS = frozenset(
    "cm mm km kg mg ms hr hrs min mins sec secs ft yd mi mph lb lbs oz ml mL sq deg rad "
    "units unit cents dollars".split()
)
_PROSE_PAIR = re.compile(r"(?<![A-Za-z_\\])([A-Za-z]{2,})\s+(?=([A-Za-z]{2,})(?![A-Za-z_(]))")
"""Two words of two or more letters side by side with only a space between."""
_NOT_UNITS = frozenset(
    "hundred hundreds thousand thousands million millions billion billions trillion dozen "
    "not no never nor except minus plus times over squared cubed half halves thirds quarters "
    "tenths hundredths thousandths less more".split()
)
"""Words after a value that change what it means ("5 hundred", "5 squared", "2 not"): the
answer is refused instead of the word being dropped as a unit."""
_TRAILING_WORD = re.compile(r"(?<=[\d)])\s+([A-Za-z]+)(?:\s*\*\*\s*\(?\s*\d\s*\)?)?\s*$")


def normalize_words(text: str) -> str:
    """How a text answer is compared: lower case, single spaces, no enclosing brackets."""
    text = " ".join(text.replace(TEXT_OPEN, " ").replace(TEXT_CLOSE, " ").split()).lower()
    while len(text) > 1 and text[0] in "([" and text[-1] in ")]":
        text = text[1:-1].strip()
    return text.strip(" .")


def _is_word(word: str) -> bool:
    """A letter run a reader sees as a word: four or more letters that are not known names,
    or a three-letter run with no known name in it (``yes``, ``sey``)."""
    try:
        parts = _split_letters(word, strict=False)
    except MathParseError:
        return True
    singles = run = 0
    for part in parts:
        run = run + 1 if len(part) == 1 else 0
        singles = max(singles, run)
    return singles >= 3


def _is_prose(text: str) -> bool:
    """Letters and spaces a reader sees as words ("no solution", "yes", "odd"), not as math
    made of names and single letters ("\\sin x \\cos x", "\\alpha\\beta", "x y")."""
    tokens = re.findall(r"[A-Za-z]+", text)
    if any(_is_word(token) for token in tokens):
        return True
    unknown = [t for t in tokens if len(t) >= 2 and t not in _NAMES]
    return len(unknown) >= 2


def _drop_text(text: str, units: bool) -> str:
    """Remove ``\\text{...}`` segments inside an answer: a connective inside one separates
    answers; anything else is a unit (dropped when ``units`` is allowed, else refused)."""

    def one(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        if not inner or inner == ",":
            return " , " if inner == "," else " "
        if inner == PCT:
            return PCT
        if re.search(r"\d", inner):
            # "5 \text{ or 6}": a value hidden in text is part of the answer, never a unit.
            raise MathParseError(f"a value inside text {inner!r}; write the answer as math")
        if any(word.lower() in _NOT_UNITS for word in re.findall(r"[A-Za-z]+", inner)):
            raise MathParseError(f"{inner!r} after the value changes it; write it as math")
        if not units:
            raise MathParseError(f"unit or text {inner!r} in the answer; give the bare value")
        return " "

    return _TEXT_POWER.sub(one, text)


def _drop_unit_word(text: str, units: bool) -> str:
    """``125 miles``, ``6 cm^2``: a trailing word after a value is a unit."""
    match = _TRAILING_WORD.search(text)
    if match is None or not re.search(r"[\d)]", text[: match.start()]):
        return text
    word = match.group(1)
    if word.lower() in _NOT_UNITS:
        raise MathParseError(f"{word!r} after the value changes it; write the value as math")
    if word not in _SHORT_UNITS and not _is_word(word):
        return text
    if not units:
        raise MathParseError(f"unit {word!r} in the answer; give the bare value")
    return text[: match.start()]


def split_structure(plain: str, *, units: bool = True) -> Piece:
    """The shape of a plain-math answer: equation, relation, interval, tuple, set, list,
    system of equations, text, expression.

    Args:
        plain: Output of :func:`latex_to_plain`.
        units: Drop unit text after a value (``125 \\text{ miles}``); else refuse it.

    Raises:
        MathParseError: an empty piece, or a unit when ``units`` is off.
    """
    text = plain.strip().rstrip(".").strip()
    if not text:
        raise MathParseError("empty answer")
    segments = _TEXT_SEGMENT.findall(text)
    if len(segments) == 1 and _TEXT_SEGMENT.fullmatch(text):
        inner = segments[0].strip().rstrip(".")
        if not _CHOICE.match(inner) and not re.fullmatch(r"[\d\s.,/+\-]+", inner):
            if inner.strip() in ("", ","):
                raise MathParseError("empty answer")
            return Piece("text", text=normalize_words(inner))
        text = inner
    text = _drop_text(text, units)
    text = " ".join(text.split()).strip().rstrip(".").strip()
    if not text:
        raise MathParseError("empty answer")
    if _WORDS_ONLY.match(text) and _is_prose(text):
        return Piece("text", text=normalize_words(text))
    return _solutions(text, units)


def _solutions(text: str, units: bool) -> Piece:
    """``;`` separates solutions; ``,`` separates values or the equations of one solution."""
    parts = [p for p in _split_top(text, ";") if p.strip()]
    if len(parts) > 1:
        return Piece("list", [_solutions(p, units) for p in parts])
    text = parts[0].strip() if parts else ""
    if not text:
        raise MathParseError("empty answer")
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    commas = [c for c in _split_top(text, ",")]
    if len(commas) > 1 and any(_has_top(c, "=≈" + _RELATIONS) for c in commas):
        items: list[Piece] = []
        lhs: Piece | None = None
        for part in commas:
            if not part.strip():
                continue
            if _has_top(part, "=≈" + _RELATIONS):
                piece = _single(part, units)
                if piece.kind == "eq":
                    lhs = piece.items[0]
            else:
                piece = _expr_or_structure(part, units)
                if lhs is not None:
                    piece = Piece("eq", [lhs, piece])  # "x = 1, 2": more values of x
            items.append(piece)
        if not items:
            raise MathParseError("empty answer")
        names = [it.items[0].text for it in items if it.kind == "eq" and it.items[0].kind == "expr"]
        if len(items) > 1 and len(names) == len(items) and len(set(names)) == len(names):
            return Piece("system", items)
        return Piece("list", items)
    return _single(text, units)


def _has_top(text: str, chars: str) -> bool:
    return bool(_split_top_at(text, chars)[1])


def _single(text: str, units: bool) -> Piece:
    """One answer without top-level separators."""
    text = text.strip()
    if not text:
        raise MathParseError("empty answer")
    if text in ("∅",) or text.replace(" ", "") in ("{}", "()"):
        return Piece("empty")
    if _has_top(text, "≈"):
        # "x = 1/3 ≈ 0.33": the exact value is the answer, the approximation is commentary;
        # "x ≈ 11" names a value.
        left, _, right = text.partition("≈")
        right = _split_top(right, "≈")[0]
        if not left.strip():
            return _single(right, units)
        if re.fullmatch(r"\s*[A-Za-z](?:_\w+)?\s*", left):
            return _single(f"{left} = {right}", units)
        return _single(left, units)
    if "∈" in text:
        text = text.split("∈")[-1].strip()
    unions = _split_top(text, "∪")
    if len(unions) > 1:
        members = [_single(part, units) for part in unions]
        for member in members:
            if member.kind == "tuple" and len(member.items) == 2:
                member.kind = "interval"  # "(a, b) ∪ ..." : open intervals
        return Piece("union", members)
    if _has_top(text, _RELATIONS):
        return _relation(text, units)
    eq_parts = _split_top(text, "=")
    if len(eq_parts) > 1:
        lhs, rhs = eq_parts[0].strip(), eq_parts[-1].strip()
        if not lhs or not rhs:
            raise MathParseError("'=' with nothing on one side")
        return Piece("eq", [_expr_or_structure(lhs, units), _expr_or_structure(rhs, units)])
    return _expr_or_structure(text, units)


def _relation(text: str, units: bool) -> Piece:
    """``a < b``, ``-2 ≤ x ≤ 7``, ``x ≠ 3``: a chain of sides and relations."""
    sides, ops = _split_top_at(text, _RELATIONS)
    if any(not side.strip() for side in sides) or len(sides) > 4:
        raise MathParseError("a relation needs a value on each side")
    if any("=" in side for side in sides):
        raise MathParseError("mixed '=' and inequality")
    return Piece("rel", [_expr_or_structure(side, units) for side in sides], ops=tuple(ops))


def _expr_or_structure(text: str, units: bool = True) -> Piece:
    text = text.strip()
    if not text:
        raise MathParseError("empty expression")
    if _wrapped(text, "{", "}"):
        inner = text[1:-1].strip()
        builder = _SET_BUILDER.match(inner)
        if builder is not None:
            # "{x | x > 2}", "{x : 1 < x ≤ 3}": the set of x meeting the condition (compared
            # as the interval or union it describes, never as an inequality answer).
            return Piece("builder", [_single(builder.group(1), units)])
        return Piece(
            "set",
            [_expr_or_structure(p, units) for p in _split_top(inner, ",;") if p.strip()]
            if inner
            else [],
        )
    opens, closes = "([", ")]"
    if text[0] in opens and text[-1] in closes:
        inner = text[1:-1]
        # "(a, b]" is only a group when brackets match as one unit.
        parts = _split_top(inner, ",;")
        balanced = _balanced(inner)
        if balanced and len(parts) == 2 and (text[0] == "[" or text[-1] == "]"):
            return Piece(
                "interval",
                [_expr_or_structure(parts[0], units), _expr_or_structure(parts[1], units)],
                closed=(text[0] == "[", text[-1] == "]"),
            )
        if balanced and len(parts) >= 2 and text[0] == "(" and text[-1] == ")":
            return Piece("tuple", [_expr_or_structure(p, units) for p in parts])
    parts = _split_top(text, ",")
    if len(parts) > 1:
        return Piece("list", [_expr_or_structure(p, units) for p in parts if p.strip()])
    if "±" in text or "∓" in text:
        plus = text.replace("±", "+", 1).replace("∓", "-", 1)
        minus = text.replace("±", "-", 1).replace("∓", "+", 1)
        return Piece("set", [_expr_or_structure(plus, units), _expr_or_structure(minus, units)])
    if _CLOCK.match(text):
        # "12:00", "3:00": a time of day compares as written, not as a ratio over zero.
        return Piece("text", text=text.replace(" ", ""))
    ratio = _split_top(text, ":")
    if len(ratio) > 2:
        # "3:4:5" is a ratio of three parts, compared part by part.
        return Piece("tuple", [_expr_or_structure(p, units) for p in ratio])
    percent = text.rstrip().endswith(PCT)
    text = text.replace(PCT, " ").strip()
    if not text:
        raise MathParseError("a percent sign without a value")
    text = _drop_unit_word(text, units).strip()
    if not text:
        raise MathParseError("a unit without a value")
    for match in _PROSE_PAIR.finditer(text):
        first, second = match.group(1), match.group(2)
        if first not in _NAMES and second not in _NAMES and not (first + second).isupper():
            # "The sum is 5" is a sentence, not the product T*h*e*s*u*m*i*s*5.
            raise MathParseError(f"'{first} {second}' looks like prose, not math")
    base = _BASE_NUMERAL.match(text)
    if base is not None:
        digits, radix = base.group(1), int(base.group(2))
        if not 2 <= radix <= 36:
            raise MathParseError(f"base {radix} is not between 2 and 36")
        try:
            value = int(digits, radix)
        except ValueError:
            raise MathParseError(f"{digits} is not a numeral in base {radix}") from None
        if len(digits) > MAX_DIGITS:
            raise MathParseError(f"numeral with more than {MAX_DIGITS} digits")
        return Piece("expr", text=str(value), base=radix)
    return Piece("expr", text=text, percent=percent)


_SET_BUILDER = re.compile(r"^[A-Za-z]\s*[|:]\s*(?=\S)(.*[A-Za-z].*)$")
_CLOCK = re.compile(r"^\s*\d{1,2}\s*:\s*0{2}\s*$")


def _balanced(text: str) -> bool:
    _, lowest, depth = _bracket_walk(text)
    return lowest >= 0 and depth == 0


# -- tokens -> Python expression ---------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?|\.\d+)|(?P<name>[A-Za-z]+(?:_[A-Za-z0-9]+)?)"
    r"|(?P<op>\*\*|[-+*/^!|(),\[\]:]))"
)


def _split_letters(word: str, strict: bool = True) -> list[str]:
    """``"2xy"`` reads as 2*x*y: split a letter run into known names and single letters.

    A run of four or more letters that is not made of known names is a word, and prose is
    not a math answer ("the square root of two" must not parse as a product of symbols).
    """
    if "_" in word:
        head, _, sub = word.partition("_")
        parts = _split_letters(head, strict)
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
    if strict and longest >= 4:
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
            tokens.append(("op", {"^": "**", ":": "/"}.get(op, op)))
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
            # Bare function: its argument is the next implicit product of numbers and
            # letters (``\\sin 2x`` is sin(2x), ``\\ln|x|`` is ln(|x|)), each with an
            # optional power; it stops at an operator, a bracket or another function.
            if nxt[1] == "|":
                close = next(
                    (j for j in range(index + 2, len(tokens)) if tokens[j][1] == "|"), None
                )
                if close is None:
                    raise MathParseError("unbalanced '|'")
                out.append(value + "(")
                out.append(_emit(tokens[index + 1 : close + 1]))
                out.append(")")
                index = close + 1
                continue
            if nxt[0] == "func" or nxt[1] in (")", "]", "+", "-", "*", "/", "**", ",", "!"):
                raise MathParseError(f"write {value}(...) with parentheses")
            end = _atom_end(tokens, index + 1)
            if end < len(tokens) and tokens[end][1] == "**":
                end = _atom_end(tokens, end + 1)
            while end < len(tokens) and tokens[end][0] in ("num", "name"):
                end += 1
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
