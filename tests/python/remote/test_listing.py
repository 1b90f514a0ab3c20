"""The working dir's listing: the script run by a real shell here, its output parsed."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.remote import listing
from tandem.remote.mirror import EXCLUDES
from tandem.remote.unpack import Limits


def run(wd: Path, script: str | None = None) -> str:
    """What the server's bash endpoint would answer for SCRIPT run in WD."""
    return subprocess.run(["sh", "-c", script or listing.script(EXCLUDES, 100)], cwd=wd,
                          capture_output=True, text=True, check=True).stdout


def packed(records: bytes) -> str:
    return f"{listing.BEGIN}\n{base64.b64encode(records).decode()}\n{listing.END}\n"


def test_the_listing_has_files_folders_hashes_and_leaves_out_what_is_not_mirrored(
        tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    (wd / "sub" / "empty").mkdir(parents=True)
    (wd / "sub" / "a.txt").write_bytes(b"alpha")
    (wd / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(wd / "run.sh", 0o755)
    (wd / "big.bin").write_bytes(b"x" * 101)  # over the cap of 100: listed, not hashed
    (wd / "é ü.txt").write_bytes(b"non-ascii name")
    (wd / "odd\nname").write_bytes(b"")
    (wd / ".git").mkdir()
    (wd / ".git" / "config").write_text("[core]")
    (wd / "node_modules" / "m").mkdir(parents=True)
    (wd / "node_modules" / "m" / "i.js").write_text("")
    (wd / "x.pyc").write_bytes(b"")
    (wd / "link").symlink_to("sub/a.txt")
    got = listing.parse(listing.decode(run(wd)) or b"", "wd", Limits(file_cap=100))
    assert got is not None and got.git
    assert got.files == {"sub/a.txt": (0o644 & ~_umask(), 5), "run.sh": (0o755, 10),
                         "big.bin": (0o644 & ~_umask(), 101),
                         "é ü.txt": (0o644 & ~_umask(), 14)}
    assert got.dirs == {"sub", "sub/empty"}
    assert got.hashes == {rel: hashlib.sha1((wd / rel).read_bytes()).hexdigest()
                          for rel in ("sub/a.txt", "run.sh", "é ü.txt")}
    assert got.odd_names == ["'odd\\nname'"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_server_without_the_tools_gets_the_archive(tmp_path: Path) -> None:
    (tmp_path / "wd").mkdir()
    (tmp_path / "wd" / "f").write_text("x")
    script = listing.script(EXCLUDES, 100)
    for broken in (script.replace("-printf", "-no-such-test"),
                   script.replace("sha1sum -z", "sha1sum --no-such-option")):
        assert listing.parse(listing.decode(run(tmp_path / "wd", broken)) or b"", "wd",
                             Limits()) is None
    assert listing.decode(listing.UNSUPPORTED + "\n") is None


@pytest.mark.parametrize("records, why", [
    (b"d\x00\x00f\x00644\x001\x00../out\x00S\x00E0\x00", "'..'"),
    (b"d\x00\x00f\x00644\x001\x00/etc/passwd\x00S\x00E0\x00", "empty"),
    (b"d\x00\x00d\x00a\x00f\x00644\x001\x00a\x00S\x00E0\x00", "both a file and a folder"),
    (b"d\x00\x00S\x00", "cut short"),
    (b"d\x00\x00q\x00S\x00E0\x00", "unknown record"),
    (b"d\x00\x00S\x00nothash\x00E0\x00", "unreadable hash line"),
])
def test_a_hostile_listing_is_refused(records: bytes, why: str) -> None:
    with pytest.raises(TandemError, match=why):
        listing.parse(listing.decode(packed(records)) or b"", "wd", Limits())


def test_a_listing_over_the_caps_is_refused() -> None:
    files = b"".join(b"f\x00644\x001\x00f%d\x00" % i for i in range(11))
    many = b"d\x00\x00" + files + b"S\x00E0\x00"
    with pytest.raises(TandemError, match="more than 10 entries"):
        listing.parse(many, "wd", Limits(max_members=10))
    with pytest.raises(TandemError, match="printed no listing"):
        listing.decode("no markers here")
