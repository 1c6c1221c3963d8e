"""Safe evaluation of model-written formulas and FinQA-style programs.

A formula is untrusted text. It is parsed with :func:`ast.parse` (which only parses) and then
walked by a small interpreter that knows numbers, operand names, ``+ - * / **``, unary signs,
parentheses and the functions ``abs round min max sum avg``. Anything else (attribute access,
subscripts, lambdas, comprehensions, keyword arguments, strings, unknown functions such as
``__import__``) is rejected before evaluation with a one-line reason. Size, node count, nesting
depth, exponents and intermediate magnitudes are bounded, so ``9**9**9``, a megabyte of
parentheses or a billion-term sum fail fast instead of eating the host. Nothing here calls
``eval``, ``exec``, ``sympify`` or ``parse_expr``; plain floats are used, which keeps the hot
path at a few microseconds per formula.

A FinQA program (``subtract(5829, 5735), divide(#0, 5735)``) is tokenised by hand; its steps
may refer to earlier results (``#n``), constants (``const_100``, ``const_m1``), operand names,
literal figures and table rows (``table_sum(revenue, none)``).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ._numbers import parse_number

__all__ = [
    "Formula",
    "FormulaError",
    "FormulaRejected",
    "FormulaLimits",
    "Program",
    "const_value",
    "evaluate",
    "is_constant",
    "parse_formula",
    "parse_program",
    "run_program",
]


class FormulaError(ValueError):
    """The formula or program is invalid, unsafe or cannot be evaluated (a model failure)."""


class FormulaRejected(FormulaError):
    """The formula breaks the safety rules or resource bounds; the answer scores 0."""


@dataclass(frozen=True, slots=True)
class FormulaLimits:
    """Bounds applied to every formula and program.

    Attributes:
        max_length: Characters of formula text accepted before parsing.
        max_nodes: Syntax-tree nodes accepted.
        max_depth: Nesting depth accepted.
        max_exponent: Largest absolute exponent of ``**``.
        max_magnitude: Largest absolute value of any intermediate result.
        max_steps: Steps of a FinQA program.
    """

    max_length: int = 2000
    max_nodes: int = 400
    max_depth: int = 40
    max_exponent: float = 64.0
    max_magnitude: float = 1e30
    max_steps: int = 64


DEFAULT_LIMITS = FormulaLimits()

_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Pow: "**",
}
_FUNCTIONS = ("abs", "avg", "max", "mean", "min", "round", "sum")
_ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Call,
    ast.Tuple,
    ast.List,
    ast.USub,
    ast.UAdd,
    *_BINOPS,
)
_NODE_NAMES: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripts",
    ast.Lambda: "lambdas",
    ast.Compare: "comparisons",
    ast.BoolOp: "boolean operators",
    ast.IfExp: "conditional expressions",
    ast.NamedExpr: "assignment expressions",
    ast.ListComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.Starred: "star arguments",
    ast.JoinedStr: "f-strings",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.Await: "await",
    ast.Yield: "yield",
}


@dataclass(frozen=True, slots=True)
class Formula:
    """A parsed, validated formula.

    Attributes:
        source: The formula text.
        tree: The validated expression tree.
        names: Operand names it uses.
        literals: Numeric literals it contains, as ``(value, decimals)`` pairs.
    """

    source: str
    tree: ast.expr
    names: frozenset[str]
    literals: tuple[tuple[float, int], ...]
    literal_nodes: tuple[ast.Constant, ...] = ()
    """The literal nodes, in the order of :attr:`literals` (perturbed by identity)."""


def _where(node: ast.AST) -> str:
    col = getattr(node, "col_offset", None)
    return f" (at column {col + 1})" if isinstance(col, int) else ""


def parse_formula(text: str, limits: FormulaLimits = DEFAULT_LIMITS) -> Formula:
    """Parse and validate a formula without evaluating anything.

    Results are memoised (GRPO groups repeat completions); a rejected formula raises again.

    Raises:
        FormulaRejected: too long, not arithmetic, too deep or too large, or uses something
            outside the whitelist; the message is one line meant for the model.
    """
    if not isinstance(text, str):
        raise FormulaRejected("formula must be a string")
    if len(text) > limits.max_length:
        raise FormulaRejected(
            f"formula is {len(text)} characters long; the limit is {limits.max_length}"
        )
    return _parse_formula(text, limits)


@lru_cache(maxsize=4096)
def _parse_formula(text: str, limits: FormulaLimits) -> Formula:
    if not isinstance(text, str):
        raise FormulaRejected("formula must be a string")
    if len(text) > limits.max_length:
        raise FormulaRejected(
            f"formula is {len(text)} characters long; the limit is {limits.max_length}"
        )
    source = text.strip().replace("\u2212", "-").replace("×", "*").replace("÷", "/")
    if not source:
        raise FormulaRejected("formula is empty")
    if source.count("(") > limits.max_depth * 2:
        raise FormulaRejected("formula nests too deeply")
    try:
        module = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise FormulaRejected(
            f"formula is not valid arithmetic: {exc.msg} (at column {exc.offset})"
        ) from None
    except (ValueError, RecursionError, MemoryError):
        raise FormulaRejected(
            "formula could not be parsed (too deep or invalid characters)"
        ) from None
    for node in ast.walk(module):  # bounded: the text is at most max_length characters
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise FormulaRejected(f"name {node.id!r} not allowed{_where(node)}")
    names: set[str] = set()
    literals: list[tuple[float, int]] = []
    literal_nodes: list[ast.Constant] = []
    stack: list[tuple[ast.AST, int]] = [(module, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > limits.max_nodes:
            raise FormulaRejected(f"formula has more than {limits.max_nodes} terms")
        if depth > limits.max_depth:
            raise FormulaRejected(f"formula nests deeper than {limits.max_depth} levels")
        if not isinstance(node, _ALLOWED_NODES):
            what = _NODE_NAMES.get(type(node), type(node).__name__)
            raise FormulaRejected(f"{what} not allowed in a formula{_where(node)}")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise FormulaRejected(
                    f"only numbers are allowed as constants, got {node.value!r:.40}"
                )
            # A 321-digit integer is a valid Python literal that float() cannot hold, and
            # 1e999 parses to inf: both are the model's error, never an OverflowError.
            if isinstance(node.value, int) and abs(node.value) > limits.max_magnitude:
                raise FormulaRejected(
                    f"literal too large (limit {limits.max_magnitude:g}){_where(node)}"
                )
            if not math.isfinite(node.value) or abs(node.value) > limits.max_magnitude:
                raise FormulaRejected(
                    f"literal out of range (limit {limits.max_magnitude:g}){_where(node)}"
                )
            segment = ast.get_source_segment(source, node) or ""
            num = parse_number(segment) if len(segment) <= 64 else None
            literals.append((float(node.value), num.decimals if num else 0))
            literal_nodes.append(node)
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise FormulaRejected(f"name {node.id!r} not allowed{_where(node)}")
            names.add(node.id)
        elif isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name):
                what = _NODE_NAMES.get(type(func), "computed functions")
                raise FormulaRejected(f"{what} not allowed in a formula{_where(func)}")
            if func.id not in _FUNCTIONS:
                raise FormulaRejected(
                    f"function {func.id!r} not allowed{_where(node)}; allowed: {', '.join(_FUNCTIONS)}"
                )
            if node.keywords:
                raise FormulaRejected(f"keyword arguments not allowed{_where(node)}")
            for arg in node.args:
                stack.append((arg, depth + 1))
            continue
        elif isinstance(node, ast.Tuple | ast.List) and depth == 1:
            raise FormulaRejected("a formula must be one expression, not a list")
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))
    body = module.body
    return Formula(source, body, frozenset(names), tuple(literals), tuple(literal_nodes))


def evaluate(
    formula: Formula,
    values: Mapping[str, float],
    limits: FormulaLimits = DEFAULT_LIMITS,
    literals: Mapping[int, float] | None = None,
) -> float:
    """Evaluate a parsed formula over operand values.

    Args:
        formula: From :func:`parse_formula`.
        values: Operand values by name.
        limits: Exponent and magnitude bounds.
        literals: Replacement values of literal nodes, keyed by ``id()`` of a node in
            :attr:`Formula.literal_nodes` (the operand-dependence test perturbs them).

    Raises:
        FormulaError: unknown operand, division by zero, an exponent or value out of bounds.
    """
    missing = sorted(formula.names - values.keys())
    if missing:
        known = ", ".join(sorted(values)) or "none"
        raise FormulaError(
            f"formula uses unknown operand(s) {', '.join(missing)} (operands: {known})"
        )
    return _Evaluator(values, limits, literals).run(formula.tree)


class _Evaluator:
    __slots__ = ("limits", "literals", "values")

    def __init__(
        self,
        values: Mapping[str, float],
        limits: FormulaLimits,
        literals: Mapping[int, float] | None = None,
    ) -> None:
        self.values = values
        self.limits = limits
        self.literals = literals

    def check(self, value: float) -> float:
        if not math.isfinite(value) or abs(value) > self.limits.max_magnitude:
            raise FormulaRejected(f"intermediate value out of range ({value:.3g})")
        return value

    def run(self, node: ast.expr) -> float:
        if isinstance(node, ast.BinOp):
            left = self.run(node.left)
            right = self.run(node.right)
            op = type(node.op)
            if op is ast.Add:
                return self.check(left + right)
            if op is ast.Sub:
                return self.check(left - right)
            if op is ast.Mult:
                return self.check(left * right)
            if op is ast.Div:
                if right == 0:
                    raise FormulaError(f"division by zero{_where(node)}")
                return self.check(left / right)
            return self.power(left, right, node)
        if isinstance(node, ast.Name):
            return float(self.values[node.id])
        if isinstance(node, ast.Constant):
            assert isinstance(node.value, int | float)  # checked by parse_formula
            if self.literals is not None:
                found = self.literals.get(id(node))
                if found is not None:
                    return found
            return float(node.value)
        if isinstance(node, ast.UnaryOp):
            value = self.run(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Call):
            return self.call(node)
        raise FormulaError(f"cannot evaluate {type(node).__name__}{_where(node)}")

    def power(self, base: float, exponent: float, node: ast.AST) -> float:
        if abs(exponent) > self.limits.max_exponent:
            raise FormulaRejected(
                f"exponent {exponent:g} too large (limit {self.limits.max_exponent:g}){_where(node)}"
            )
        if base == 0 and exponent < 0:
            raise FormulaError(f"zero to a negative power{_where(node)}")
        if base < 0 and exponent != int(exponent):
            raise FormulaError(f"negative base with a fractional exponent{_where(node)}")
        try:
            return self.check(float(base**exponent))
        except OverflowError:
            raise FormulaRejected(f"power overflows{_where(node)}") from None

    def call(self, node: ast.Call) -> float:
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        args: list[float] = []
        for arg in node.args:
            if isinstance(arg, ast.Tuple | ast.List):
                args.extend(self.run(item) for item in arg.elts)
            else:
                args.append(self.run(arg))
        if name == "abs":
            if len(args) != 1:
                raise FormulaError("abs() takes one argument")
            return abs(args[0])
        if name == "round":
            if len(args) not in (1, 2):
                raise FormulaError("round() takes one or two arguments")
            digits = args[1] if len(args) == 2 else 0
            if digits != int(digits) or not 0 <= digits <= 12:
                raise FormulaError("round() digits must be an integer from 0 to 12")
            return float(round(args[0], int(digits)))
        if not args:
            raise FormulaError(f"{name}() needs at least one argument")
        if name == "min":
            return min(args)
        if name == "max":
            return max(args)
        total = self.check(math.fsum(args))
        return total if name == "sum" else total / len(args)


# -- FinQA programs ----------------------------------------------------------------------

_STEP = re.compile(r"\s*([a-z_]+)\s*\(([^()]*)\)\s*(?:,|$)")
_BINARY = {"add", "subtract", "multiply", "divide", "exp", "greater"}
_TABLE = {"table_sum", "table_average", "table_max", "table_min"}
_CONST = re.compile(r"^const_(m)?(\d+(?:\.\d+)?)$", re.ASCII)


def is_constant(value: float) -> bool:
    """Numbers a formula or program may use without citing them: integers up to 100 in
    magnitude and powers of ten (``1e-12`` .. ``1e12``). Every other number is a figure and
    must be printed in the document."""
    if not math.isfinite(value):
        return False
    if value == int(value) and abs(value) <= 100:
        return True
    if value > 0:
        exponent = math.log10(value)
        return abs(exponent - round(exponent)) < 1e-12 and abs(exponent) <= 12
    return False


def const_value(arg: str) -> float | None:
    """The value of a FinQA ``const_`` argument (``const_100``, ``const_m1``), or None."""
    match = _CONST.match(arg)
    if match is None:
        return None
    number = float(match.group(2))
    return -number if match.group(1) else number


@dataclass(frozen=True, slots=True)
class Program:
    """A parsed FinQA program.

    Attributes:
        source: The program text.
        steps: ``(op, args)`` per step, arguments as written.
        literals: Printed figures used as arguments (to be grounded in the document),
            including ``const_`` arguments that are not small constants (``const_24.41`` is a
            figure in disguise).
        names: Operand names used as arguments.
        rows: Table row labels used by ``table_*`` steps.
    """

    source: str
    steps: tuple[tuple[str, tuple[str, ...]], ...]
    literals: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()
    rows: tuple[str, ...] = field(default=())


def parse_program(text: str, limits: FormulaLimits = DEFAULT_LIMITS) -> Program:
    """Tokenise a FinQA program (``op(a, b), op(#0, c)``) and check its shape.

    Raises:
        FormulaError: unknown operation, wrong arity, a reference to a later step, too long.
    """
    if not isinstance(text, str):
        raise FormulaRejected("program must be a string")
    if len(text) > limits.max_length:
        raise FormulaRejected(
            f"program is {len(text)} characters long; the limit is {limits.max_length}"
        )
    source = text.strip()
    steps: list[tuple[str, tuple[str, ...]]] = []
    literals: list[str] = []
    names: set[str] = set()
    rows: list[str] = []
    pos = 0
    while pos < len(source):
        match = _STEP.match(source, pos)
        if match is None:
            raise FormulaRejected(
                f"program is not a list of op(arg, arg) steps (at column {pos + 1})"
            )
        pos = match.end()
        op = match.group(1)
        args = tuple(a.strip() for a in match.group(2).split(","))
        if op in _BINARY:
            if len(args) != 2:
                raise FormulaRejected(f"step {len(steps)}: {op} takes two arguments")
            for arg in args:
                if arg.startswith("#"):
                    # isdigit() accepts '²' and other digits int() refuses: ASCII only.
                    ref = arg[1:]
                    if not (ref.isascii() and ref.isdigit()) or int(ref) >= len(steps):
                        raise FormulaRejected(
                            f"step {len(steps)}: {arg!r:.20} does not refer to an earlier step"
                        )
                elif (const := const_value(arg)) is not None:
                    if not is_constant(const):
                        literals.append(arg[len("const_") :].replace("m", "-", 1))
                elif parse_number(arg) is not None:
                    literals.append(arg)
                elif arg.isidentifier() and not arg.startswith("_"):
                    names.add(arg)
                else:
                    raise FormulaRejected(f"step {len(steps)}: cannot read argument {arg!r:.40}")
        elif op in _TABLE:
            if not args or not args[0]:
                raise FormulaRejected(f"step {len(steps)}: {op} needs a row label")
            rows.append(args[0])
        else:
            allowed = ", ".join(sorted(_BINARY | _TABLE))
            raise FormulaRejected(
                f"step {len(steps)}: unknown operation {op!r:.30}; allowed: {allowed}"
            )
        steps.append((op, args))
        if len(steps) > limits.max_steps:
            raise FormulaRejected(f"program has more than {limits.max_steps} steps")
    if not steps:
        raise FormulaRejected("program is empty")
    return Program(source, tuple(steps), tuple(literals), frozenset(names), tuple(rows))


def run_program(
    program: Program,
    values: Mapping[str, float],
    row_values: Callable[[str], Sequence[float] | None],
    limits: FormulaLimits = DEFAULT_LIMITS,
    *,
    overrides: Mapping[str, float] | None = None,
    inputs: dict[str, float] | None = None,
) -> float | bool:
    """Execute a parsed program; the last step's result is the answer.

    Every figure the program reads is an *input*, keyed by the argument as written (one key
    for every use of the same operand or figure; a ``table_*`` step is keyed ``op(row)``):
    operand names, printed figures and ``const_`` values that are not small constants. Step
    references and small constants are not inputs.

    Args:
        program: From :func:`parse_program`.
        values: Operand values by name.
        row_values: Numbers of the table row with a given label, or None when not found.
        limits: Exponent and magnitude bounds.
        overrides: Replacement values of inputs (the operand-dependence test perturbs them).
        inputs: Filled with the value of every input read, by key.

    Raises:
        FormulaError: unknown operand or row, division by zero, out-of-range values.
    """
    results: list[float | bool] = []
    checker = _Evaluator(values, limits)

    def read(key: str, value: float) -> float:
        if inputs is not None:
            inputs[key] = value
        if overrides is not None:
            return overrides.get(key, value)
        return value

    def arg_value(arg: str) -> float:
        key = arg
        if arg.startswith("#"):
            found = results[int(arg[1:])]
            if isinstance(found, bool):
                raise FormulaError(f"{arg} is a yes/no result, not a number")
            return found
        const = const_value(arg)
        if const is not None:
            return read(key, const) if not is_constant(const) else const
        parsed = parse_number(arg)
        if parsed is not None:
            return read(key, parsed.base)
        if arg not in values:
            raise FormulaError(f"program uses unknown operand {arg!r:.40}")
        return read(key, float(values[arg]))

    for index, (op, args) in enumerate(program.steps):
        if op in _TABLE:
            found_row = row_values(args[0])
            if not found_row:
                raise FormulaError(f"step {index}: no table row {args[0]!r:.60} with numbers")
            total = math.fsum(found_row)
            if op == "table_sum":
                value = checker.check(total)
            elif op == "table_average":
                value = total / len(found_row)
            elif op == "table_max":
                value = max(found_row)
            else:
                value = min(found_row)
            results.append(read(f"{op}({args[0]})", value))
            continue
        a, b = arg_value(args[0]), arg_value(args[1])
        if op == "add":
            results.append(checker.check(a + b))
        elif op == "subtract":
            results.append(checker.check(a - b))
        elif op == "multiply":
            results.append(checker.check(a * b))
        elif op == "divide":
            if b == 0:
                raise FormulaError(f"step {index}: division by zero")
            results.append(checker.check(a / b))
        elif op == "exp":
            results.append(checker.power(a, b, ast.Constant(0)))
        else:
            results.append(a > b)
    return results[-1]
