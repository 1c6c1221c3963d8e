"""CI's per-file time table (tests/ci_durations.py; tests/conftest.py prints it under CI=true)."""

from __future__ import annotations

from ci_durations import summed


def test_phases_of_one_file_add_up_and_rank_the_slowest_first() -> None:
    table = summed(
        [
            ("tests/a.py::t[1]", 1.0),  # setup
            ("tests/a.py::t[1]", 2.5),  # call
            ("tests/a.py::u", 0.5),
            ("tests/b.py::Class::t", 10.0),
            ("tests/c.py::t", 0.25),
        ]
    )
    assert table.seconds == {"tests/a.py": 4.0, "tests/b.py": 10.0, "tests/c.py": 0.25}
    lines = table.lines(shown=2)
    assert lines[1].split() == ["10.0", "70.2%", "1", "tests/b.py"]
    assert lines[2].split() == ["4.0", "28.1%", "2", "tests/a.py"]
    assert lines[3].split() == ["0.2", "(1", "more", "files)"]
    assert lines[4].split() == ["14.2", "4", "total", "(3", "files)"]
