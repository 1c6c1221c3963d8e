"""CAD script verifier: ``cad.script`` (CadQuery or build123d, each in its own sandbox runtime).

Importing this package registers the verifier; no CAD library is imported on the host (see
``docs/cad.md``).
"""

from ._spec import LIBRARIES, CadExpect, CadSpec, HoleExpect
from ._verifier import CadScript

__all__ = ["LIBRARIES", "CadExpect", "CadScript", "CadSpec", "HoleExpect"]
