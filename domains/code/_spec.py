"""The ``code.tests`` spec: which tests, how to compare, and the limits (documented defaults)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifiers.protocol import Spec

__all__ = [
    "AssertTests",
    "CallSignature",
    "CallCase",
    "CallTests",
    "CodeTestsSpec",
    "IoCase",
    "IoTests",
    "PytestTests",
    "TestSuite",
]


def _typescript_names() -> frozenset[str]:
    from ._languages import LANGUAGES

    ts = LANGUAGES["typescript"]
    return frozenset({ts.name, *ts.aliases})


_TYPESCRIPT = _typescript_names()


class _Kind(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AssertTests(_Kind):
    """HumanEval convention: ``code`` defines ``check(candidate)``, called with the entry point.

    One test: it passes only when ``check`` returns (positive evidence that it ran to the end).
    """

    kind: Literal["assert"]
    code: str
    """Test code, typically ``def check(candidate): assert candidate(1) == 2 ...``."""
    entry_point: str | None = None
    """Name of the candidate's function handed to ``check``. Without it ``check(solution)``
    receives the candidate's whole module (if ``check`` is defined)."""
    prelude: str | None = None
    """Trusted code run before the test code in the judge (HumanEval: the prompt, whose
    helpers such as ``poly`` some checks call). Never taken from the candidate."""


class IoCase(BaseModel):
    """One stdin/stdout case."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stdin: str = ""
    stdout: str
    """Expected output; it never enters the sandbox."""
    name: str | None = None


class IoTests(_Kind):
    """Run the program once per case with ``stdin``; compare its stdout on the host."""

    kind: Literal["io"]
    cases: list[IoCase] = Field(min_length=1)
    compare: Literal["exact", "lines", "tokens", "float"] = "tokens"
    """``exact``: byte-equal text; ``lines``: equal after stripping trailing whitespace on
    each line and trailing blank lines; ``tokens``: equal whitespace-separated tokens;
    ``float``: tokens, numbers equal within ``rel_tol``/``abs_tol``."""
    rel_tol: float = Field(default=1e-6, ge=0)
    abs_tol: float = Field(default=1e-9, ge=0)


class CallCase(BaseModel):  # type: ignore[no-redef]  # pydantic-mypy: field "kwargs" vs its **kwargs
    """One call: ``entry_point(*args, **kwargs)`` should return ``expected`` (or raise)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    expected: Any = None
    """Expected return value (JSON; ``null`` must be written out); compared on the host,
    never sent to the sandbox."""
    raises: str | None = None
    """Expected exception type name instead of a return value (e.g. ``"ValueError"``)."""
    name: str | None = None

    @model_validator(mode="after")
    def _says_what_to_expect(self) -> Self:
        # A misspelt "expect" would otherwise default to None and let a function that
        # returns nothing pass.
        if "expected" not in self.model_fields_set and self.raises is None:
            raise ValueError("a call case needs 'expected' (or 'raises')")
        return self


class CallSignature(BaseModel):
    """Parameter types of a ``call`` entry point in a typed language (C++, Java, Go, Rust).

    The harness declares each argument with the language's type for it: ``int`` (C++/Java
    ``int``, Go ``int``, Rust ``i32``), ``long`` (64-bit), ``float`` (double), ``bool``,
    ``str`` (``std::string``, ``String``, ``string``, ``String``), ``list[T]``
    (``std::vector<T>``, ``java.util.List<T>``, ``[]T``, ``Vec<T>``), ``dict[str,T]`` (maps
    with string keys), ``tuple[A,B,...]`` (C++ and Rust), nested, and ``&T`` at the top of a
    parameter (by reference: Rust ``&str``, ``&[T]``). Ignored by Python, JavaScript and
    TypeScript. ``docs/code.md`` has the full table (``_callgen.SYNTAX``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    params: list[str]
    returns: str | None = None
    """Documentation only: the return value is compared as JSON whatever its type."""

    @model_validator(mode="after")
    def _types_parse(self) -> Self:
        from verifiers.errors import BadInput

        from ._callgen import parse_type

        for t in [*self.params, *([self.returns] if self.returns else [])]:
            try:
                parse_type(t)
            except BadInput as exc:
                raise ValueError(str(exc)) from None
        return self


class CallTests(_Kind):
    """Call a function with arguments; compare the JSON-serialised return value on the host."""

    kind: Literal["call"]
    entry_point: str
    cases: list[CallCase] = Field(min_length=1)
    signature: CallSignature | None = None
    """Argument types, needed by the typed languages' harnesses (see :class:`CallSignature`)."""
    rel_tol: float = Field(default=1e-9, ge=0)
    """Relative tolerance for comparing with an expected float. An expected int is compared
    exactly unless the spec sets ``rel_tol`` or ``abs_tol`` itself."""
    abs_tol: float = Field(default=1e-12, ge=0)
    values: Literal["json", "tagged"] = "json"
    """How ``args``, ``kwargs`` and ``expected`` are written: ``json`` (plain JSON: lists,
    objects with string keys) or ``tagged`` (the judge's codec, which also says tuples, sets,
    bytes, int keys: ``{"$": "set", "v": [1, 2]}``; ``kwargs`` stays an object of name ->
    tagged value). A returned set equals only an expected
    set, so a task whose answer is a set uses ``tagged``."""

    @model_validator(mode="after")
    def _tagged_values_decode(self) -> Self:
        if self.values == "tagged":
            from ._judge_codec import CodecError, decode

            for i, case in enumerate(self.cases):
                checks = [("args", case.args), ("expected", case.expected)]
                checks += [(f"kwargs.{k}", v) for k, v in case.kwargs.items()]
                for what, value in checks:
                    try:
                        decode(value)
                    except CodecError as exc:
                        raise ValueError(
                            f"cases[{i}].{what} is not valid tagged JSON ({exc}); write it as "
                            'the codec does, e.g. {"$": "set", "v": [1, 2]}, or use '
                            '"values": "json"'
                        ) from None
        return self


class PytestTests(_Kind):
    """Test files run with pytest; the candidate's code is importable as ``module``."""

    kind: Literal["pytest"]
    files: dict[str, str] = Field(min_length=1)
    """Test file name -> source. Every file given is collected."""
    module: str = "solution"
    """Name under which the tests import the candidate's code."""
    expected_tests: (
        Annotated[int, Field(ge=1)] | Annotated[list[str], Field(min_length=1)] | None
    ) = None
    """Expected test count or node ids (``test_f.py::test_x``). Without it, the tests the
    judge collects before any candidate code runs are the expected ones."""


TestSuite = Annotated[AssertTests | IoTests | CallTests | PytestTests, Field(discriminator="kind")]


class CodeTestsSpec(Spec):
    """Settings of ``code.tests``. Extra keys are kept (forward compatibility)."""

    language: str = "python"
    """Language of the code block to extract and run (see ``docs/code.md``)."""
    tests: TestSuite
    """The tests, selected by ``kind``: ``assert``, ``io``, ``call`` or ``pytest``."""
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Total time for all tests of one trajectory (the judge stops starting tests after it)."""
    test_timeout_s: float | None = Field(default=None, gt=0)
    """Time per test (a case, a ``check`` call, a pytest test); default ``min(timeout_s, 10)``."""
    memory_mb: int = Field(default=512, ge=32, le=16384)
    """Memory for the candidate process (address space) and the sandbox."""
    output_bytes: int = Field(default=1 << 20, ge=1024, le=16 << 20)
    """Most stdout/stderr bytes kept per candidate process (the rest is drained and dropped);
    an ``io`` case whose output goes past it fails as truncated."""
    partial_credit: bool = True
    """``false``: reward 1 only when every test passes, else 0."""
    max_failures_shown: int = Field(default=3, ge=0, le=50)
    """How many failing tests the feedback describes."""
    feedback_chars: int = Field(default=2000, ge=200, le=100_000)
    """Cap on the feedback text."""
    compile_timeout_s: float = Field(default=60.0, gt=0, le=600)
    """Compiled languages: time for building the program, on top of ``timeout_s`` (a build
    costs 0.3-3 s on a quiet machine and many times that on a loaded one; a build that does
    not finish in it, an infinite template or constexpr loop, is the model's fail)."""
    warnings_as_errors: bool = False
    """Compiled languages: compile with warnings as errors (``-Wall -Wextra -Werror``,
    ``-D warnings``, ``-Xlint:all -Werror``); a warning then fails the build."""
    typecheck: bool = True
    """TypeScript: type-check the program as ``tsc`` does (a type error fails the build with its
    line); ``false`` only strips the types (a syntax error still fails). Other languages: only
    ``true`` (an error otherwise: the setting would do nothing)."""
    extract: Literal["last_block", "whole"] = "last_block"
    """``last_block``: last fenced block (matching ``language``), else the whole text."""

    @model_validator(mode="after")
    def _known_shape(self) -> CodeTestsSpec:
        if not self.typecheck and self.language.strip().lower() not in _TYPESCRIPT:
            raise ValueError(
                f"typecheck: false applies to TypeScript only (language is {self.language!r}); "
                "remove the key"
            )
        if self.test_timeout_s is not None and self.test_timeout_s > self.timeout_s:
            object.__setattr__(self, "test_timeout_s", self.timeout_s)
        return self

    @property
    def per_test_timeout(self) -> float:
        """Effective per-test timeout in seconds."""
        return self.test_timeout_s if self.test_timeout_s is not None else min(self.timeout_s, 10.0)
