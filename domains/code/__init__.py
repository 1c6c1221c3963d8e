"""Code domain: ``code.tests`` runs model-written code against tests in the sandbox.

Importing this package registers the verifier; it imports nothing heavy (the sandbox is reached
through the verifier context at run time).
"""

from ._compare import compare_output, values_equal
from ._languages import LANGUAGES, Language, language_for
from ._spec import AssertTests, CallCase, CallTests, CodeTestsSpec, IoCase, IoTests, PytestTests
from ._verifier import CodeTests, extract_code

__all__ = [
    "LANGUAGES",
    "AssertTests",
    "CallCase",
    "CallTests",
    "CodeTests",
    "CodeTestsSpec",
    "IoCase",
    "IoTests",
    "Language",
    "PytestTests",
    "compare_output",
    "extract_code",
    "language_for",
    "values_equal",
]
