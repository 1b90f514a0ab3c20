"""The mirror's sync against archives served over a real socket (`ArchiveServer`).

Hostile archives (absolute names, ``..``, links out, special files, members
outside the archived folder, twice the same member, too many members, a
gzip bomb, an oversized download) are refused: nothing is written outside
the mirror's own folder and the mirror keeps what it had. A good archive
makes the mirror equal to it: new and changed files land, gone ones go,
unchanged ones are not rewritten, a too-large file is a named gap.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.remote.client import AgentServerClient
from tandem.remote.mirror import EXCLUDES, Mirror, MirrorSync
from tandem.remote.unpack import Limits

from .archive_server import ArchiveServer
from .fake_server import FakeAgentServer

WD = "/home/u/work/proj"


def member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = "",
           mode: int = 0o644, mtime: int = 1_700_000_000) -> tuple[tarfile.TarInfo, bytes]:
    """One tar member: NAME of KIND with DATA (or LINK as its target)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = mtime
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def tgz(*members: tuple[tarfile.TarInfo, bytes], manifest: bool = True) -> bytes:
    """A tar.gz of MEMBERS, the way the server builds one (top folder, trailing manifest)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
        if manifest:
            body = json.dumps({"format": "tar.gz", "source": "proj", "file_count": 0,
                               "total_bytes": 0, "excludes": []}).encode()
            info = tarfile.TarInfo("proj/archive_manifest.json")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


GOOD = tgz(member("proj", kind=tarfile.DIRTYPE, mode=0o755),
           member("proj/a.txt", b"alpha\n"),
           member("proj/src", kind=tarfile.DIRTYPE),
           member("proj/src/run.sh", b"#!/bin/sh\n", mode=0o755))


@pytest.fixture
def served() -> Iterator[ArchiveServer]:
    with ArchiveServer(GOOD) as srv:
        yield srv


def sync(srv: ArchiveServer, mirror: Mirror) -> MirrorSync:
    async def run() -> MirrorSync:
        async with AgentServerClient(srv.url) as c:
            return await mirror.sync_archive(c, WD)
    return asyncio.run(run())


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ROOT: file bytes, None for a folder; links as 'link:TARGET'."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = f"link:{os.readlink(p)}".encode()
            elif p.is_dir():
                out[rel] = None
            else:
                out[rel] = p.read_bytes()
    return out


def test_a_good_archive_becomes_the_mirror(served: ArchiveServer, tmp_path: Path) -> None:
    mirror = Mirror(tmp_path / "home", "s1")
    got = sync(served, mirror)
    assert tree(mirror.root) == {"a.txt": b"alpha\n", "src": None,
                                 "src/run.sh": b"#!/bin/sh\n"}
    assert os.stat(mirror.root / "src/run.sh").st_mode & 0o100
    assert not os.stat(mirror.root / "a.txt").st_mode & 0o100
    assert sorted(got.written) == ["a.txt", "src/run.sh"] and got.files == 2
    query = served.requests[-1]
    assert query["path"] == [WD] and query["format"] == ["tar.gz"]
    assert query["use_default_excludes"] == ["false"] and query["exclude"] == list(EXCLUDES)
    # The mirror lives under the home, outside any project, and nothing else is left there
    # but its files' hashes (the next listing compares against them).
    assert sorted(p.name for p in mirror.base.iterdir()) == ["hashes.json", "workspace"]
    assert sorted(json.loads((mirror.base / "hashes.json").read_text())) == [
        "a.txt", "src/run.sh"]


def test_changes_and_deletions_follow_the_server(served: ArchiveServer, tmp_path: Path) -> None:
    mirror = Mirror(tmp_path / "home", "s1")
    sync(served, mirror)
    inode = os.stat(mirror.root / "src/run.sh").st_ino
    served.archive = tgz(member("proj", kind=tarfile.DIRTYPE),
                         member("proj/a.txt", b"alpha changed\n"),
                         member("proj/src", kind=tarfile.DIRTYPE),
                         member("proj/src/run.sh", b"#!/bin/sh\n", mode=0o755),
                         member("proj/new", kind=tarfile.DIRTYPE),
                         member("proj/new/b.txt", b"b\n"))
    got = sync(served, mirror)
    assert sorted(got.written) == ["a.txt", "new/b.txt"]
    assert os.stat(mirror.root / "src/run.sh").st_ino == inode  # unchanged: not rewritten
    served.archive = tgz(member("proj", kind=tarfile.DIRTYPE),
                         member("proj/a.txt", b"alpha changed\n"))
    got = sync(served, mirror)
    assert got.removed == ["new/b.txt", "src/run.sh"]
    assert tree(mirror.root) == {"a.txt": b"alpha changed\n"}


def test_a_too_large_file_is_a_named_gap(served: ArchiveServer, tmp_path: Path) -> None:
    served.archive = tgz(member("proj", kind=tarfile.DIRTYPE),
                         member("proj/big.bin", b"x" * 5000), member("proj/s.txt", b"s"))
    mirror = Mirror(tmp_path / "home", "s1", limits=Limits(file_cap=4096))
    got = sync(served, mirror)
    assert [(g.path, g.reason) for g in got.gaps if g.reason == "too-large"] == [
        ("big.bin", "too-large")]
    st = os.stat(mirror.root / "big.bin")
    assert st.st_size == 5000 and st.st_blocks == 0  # a sparse placeholder, never the bytes
    assert (mirror.root / "s.txt").read_bytes() == b"s"
    assert {g.reason for g in got.gaps} == {"too-large", "excluded", "not-archived"}


def test_a_users_own_manifest_named_file_is_kept(served: ArchiveServer, tmp_path: Path) -> None:
    served.archive = tgz(member("proj", kind=tarfile.DIRTYPE),
                         member("proj/archive_manifest.json", b'{"mine": 1}'), manifest=False)
    mirror = Mirror(tmp_path / "home", "s1")
    sync(served, mirror)
    assert tree(mirror.root) == {"archive_manifest.json": b'{"mine": 1}'}


HOSTILE = {
    "absolute name": [member("/tmp/evil-abs", b"x")],
    "dot-dot": [member("proj", kind=tarfile.DIRTYPE), member("proj/../../evil-dd", b"x")],
    "symlink out": [member("proj", kind=tarfile.DIRTYPE),
                    member("proj/link", kind=tarfile.SYMTYPE, link="/tmp"),
                    member("proj/link/evil-sym", b"x")],
    "hard link": [member("proj", kind=tarfile.DIRTYPE),
                  member("proj/hard", kind=tarfile.LNKTYPE, link="/etc/passwd")],
    "device": [member("proj", kind=tarfile.DIRTYPE), member("proj/dev", kind=tarfile.CHRTYPE)],
    "fifo": [member("proj", kind=tarfile.DIRTYPE), member("proj/fifo", kind=tarfile.FIFOTYPE)],
    "outside the folder": [member("other/evil-other", b"x")],
    "twice": [member("proj", kind=tarfile.DIRTYPE), member("proj/a.txt", b"1"),
              member("proj/a.txt", b"2")],
    "file then folder": [member("proj", kind=tarfile.DIRTYPE), member("proj/a.txt", b"1"),
                         member("proj/a.txt/b", b"2")],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_archive_is_refused(served: ArchiveServer, tmp_path: Path, case: str) -> None:
    home = tmp_path / "home"
    mirror = Mirror(home, "s1")
    sync(served, mirror)
    before = tree(mirror.root)
    outside = tree(tmp_path)
    served.archive = tgz(*HOSTILE[case])
    with pytest.raises(TandemError) as err:
        sync(served, mirror)
    assert err.value.code == "remote-invalid"
    assert "refused" in err.value.message
    assert tree(mirror.root) == before  # the mirror keeps what it had
    assert tree(tmp_path) == outside  # and nothing appeared anywhere else
    assert not any(Path("/tmp").glob("evil-*"))


def test_odd_names_are_skipped_and_named(served: ArchiveServer, tmp_path: Path) -> None:
    served.archive = tgz(member("proj", kind=tarfile.DIRTYPE), member("proj/a\nb", b"1"),
                         member("proj/d\x1b", kind=tarfile.DIRTYPE),
                         member("proj/d\x1b/x", b"2"), member("proj/back\\slash", b"3"),
                         member("proj/ok.txt", b"4"))
    mirror = Mirror(tmp_path / "home", "s1")
    got = sync(served, mirror)
    assert tree(mirror.root) == {"back\\slash": b"3", "ok.txt": b"4"}
    assert [g.path for g in got.gaps if g.reason == "odd-name"] == [
        repr("a\nb"), repr("d\x1b"), repr("d\x1b/x")]


def test_member_and_size_caps(served: ArchiveServer, tmp_path: Path) -> None:
    many = [member("proj", kind=tarfile.DIRTYPE)] + [member(f"proj/f{i}", b"x")
                                                     for i in range(20)]
    served.archive = tgz(*many)
    with pytest.raises(TandemError, match="more than 10 members"):
        sync(served, Mirror(tmp_path / "h1", "s1", limits=Limits(max_members=10)))
    served.archive = tgz(member("proj", kind=tarfile.DIRTYPE),
                         member("proj/zeros", b"\0" * 3_000_000))
    assert len(served.archive) < 20_000  # compresses ~1000:1
    with pytest.raises(TandemError, match="over 1000000 bytes|more bytes than allowed"):
        sync(served, Mirror(tmp_path / "h2", "s1", limits=Limits(max_unpacked_bytes=1_000_000)))
    with pytest.raises(TandemError, match="the archive is over 1000 bytes"):
        sync(served, Mirror(tmp_path / "h3", "s1", limits=Limits(max_archive_bytes=1000)))
    served.archive = b"not a gzip at all"
    with pytest.raises(TandemError, match="not a readable tar.gz"):
        sync(served, Mirror(tmp_path / "h4", "s1"))


def test_a_gzip_bomb_stops_at_the_cap(served: ArchiveServer, tmp_path: Path) -> None:
    # Raw gzip of a tar header claiming a huge member: the decompressed stream is capped.
    info = tarfile.TarInfo("proj/huge")
    info.size = 50_000_000
    raw = info.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 50_000_000
    served.archive = gzip.compress(raw, compresslevel=9)
    with pytest.raises(TandemError, match="refused"):
        sync(served, Mirror(tmp_path / "h", "s1", limits=Limits(max_unpacked_bytes=1_000_000,
                                                         file_cap=100)))


def test_a_session_id_cannot_leave_the_mirrors(tmp_path: Path) -> None:
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(TandemError, match="not a session id"):
            Mirror(tmp_path, bad)
    for scope in ("../x", "A", "", "a/b"):
        with pytest.raises(TandemError, match="not a mirror scope"):
            Mirror(tmp_path, "s1", scope)


def test_sync_errors_name_the_host_and_the_servers_words(
        fake: FakeAgentServer, tmp_path: Path) -> None:
    # The stand-in server has no archive endpoint (404), then it is gone (unreachable).
    app = App(home=tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()

    async def run() -> list[str]:
        sid = (await new(app, NewParams(cwd=str(project)))).id
        await app.remote.attach(sid, "box", fake.url, None, "w")
        messages = []
        with pytest.raises(TandemError) as err:
            await app.remote_checkpoints.sync(sid)
        messages.append(err.value.message)
        fake.__exit__(None, None, None)
        with pytest.raises(TandemError) as err:
            await app.remote_checkpoints.sync(sid)
        messages.append(err.value.code + " " + err.value.message)
        await app.aclose()
        return messages

    missing, gone = asyncio.run(run())
    assert missing.startswith(f"Checkpoint of box:{fake.home}/w: Archive of {fake.home}/w")
    assert "Not Found (HTTP 404 from " in missing  # the server's words and which server
    assert gone.startswith("remote-unreachable Checkpoint of box:") and "did not answer" in gone
