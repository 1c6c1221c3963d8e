"""The candidate process inherits none of the judge's file descriptors.

The judge closes every descriptor but the candidate's stdio and its two remote-call pipes
when it forks the candidate (``os.closerange`` around the two pipes). A descriptor left open
there would hand the candidate a judge channel, e.g. the private duplicate of stdout that
carries the nonce-signed result lines.
"""

from __future__ import annotations

from code_helpers import Backend, traj

OPEN_FDS = (
    "import os\n\n"
    "def open_fds():\n"
    "    # The listing's own descriptor is open while it runs: counted, then left out.\n"
    "    return sorted(int(n) for n in os.listdir('/proc/self/fd'))\n"
)
CHECK = (
    "def check(candidate):\n"
    "    fds = candidate()\n"
    "    assert fds[:3] == [0, 1, 2], fds\n"
    "    assert len(fds) == 6, fds\n"
)


def test_candidate_holds_only_stdio_and_its_pipes(backend: Backend) -> None:
    res = backend.score(
        traj(OPEN_FDS, {"kind": "assert", "code": CHECK, "entry_point": "open_fds"})
    )
    assert (res.status, res.reward) == ("pass", 1.0), res.details
