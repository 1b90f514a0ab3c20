"""The reader under hostile input: every bad text is a `SexpError`, in linear time and memory."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tandem.protocol import sexp
from tandem.protocol.sexp import Symbol


@pytest.mark.parametrize(
    "bad",
    [
        "1" * 5000,  # past int()'s digit limit: a ValueError today
        "(" + "9" * 100 + ")",
        r'"\x110000"',  # beyond Unicode
        r'"\x' + "f" * 5000 + '"',
        r'"\UFFFFFFFF"',
        r'"\U0010FFFG"',
        r'"\u12"',
        r'"\uD800"',  # a lone surrogate cannot be encoded back
        "(" * 100_000 + ")" * 100_000,
        "foo\\",  # a trailing escape
        "1e999",  # not a finite float
        '"a\\',
    ],
)
def test_hostile_text_is_a_clear_error(bad: str) -> None:
    with pytest.raises(sexp.SexpError):
        sexp.loads(bad)


def test_nesting_within_the_limit_reads() -> None:
    depth = sexp.MAX_DEPTH
    assert sexp.loads("(" * depth + "1" + ")" * depth) is not None
    with pytest.raises(sexp.SexpError, match="nested"):
        sexp.loads("(" * (depth + 1) + "1" + ")" * (depth + 1))


def test_escapes_in_atoms_and_strings() -> None:
    assert sexp.loads(r"a\\b") == Symbol("a\\b")
    assert sexp.loads(r'"\x41 b"') == "A b"  # only a backslash-space ends \x
    assert sexp.loads(r'"\U0001F389\u00e9"') == "🎉é"
    assert sexp.loads("(" + "1" * sexp.MAX_INT_DIGITS + ")") == [int("1" * sexp.MAX_INT_DIGITS)]
    assert sexp.loads("١٢") == Symbol("١٢")  # only ASCII digits make a number


_PROBE = """
import resource, sys
from tandem.protocol import sexp
text = sys.argv[1] * int(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    sexp.loads(sys.argv[3] + text + sys.argv[4])
except sexp.SexpError:
    pass
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


@pytest.mark.parametrize(
    ("unit", "prefix", "suffix"),
    [("a", "", ""), ("\\a", "", ""), ("\\n", '"', '"'), ("\\n", '"', ""), ("a ", "(", ")")],
)
def test_a_4_mb_text_reads_in_bounded_memory(unit: str, prefix: str, suffix: str) -> None:
    """Today's atom regex costs ~300 bytes per character; the reader must stay near the input."""
    count = 4 * 1024 * 1024 // len(unit)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, unit, str(count), prefix, suffix],
        capture_output=True, text=True, check=True, timeout=120,
    )
    grown_mb = int(out.stdout)
    # The text itself is 4 MB; a list of 2M repeated symbols holds 2M pointers.
    limit = 100 if unit == "a " else 60
    assert grown_mb < limit, f"{unit!r}: grew {grown_mb} MB"
