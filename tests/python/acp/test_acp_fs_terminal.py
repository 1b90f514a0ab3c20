"""The ACP client's file system and terminals on their own: confinement, the
read-only ceiling, ``.git``, hostile files, streaming output, caps, timeouts,
process hygiene (real files, real processes; no agent)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tandem.editor import EditorError, NoEditor
from tandem.providers import acp_fs
from tandem.providers.acp_terminal import ExitStatus, TerminalRefused, Terminals, _kept
from tandem.reaper import living_groups


class FailingEditor:
    """An editor that does not answer (Emacs busy or gone)."""

    async def buffer_text(self, path: Path) -> str | None:
        raise EditorError("timed out")

    async def write_buffer(self, path: Path, content: str) -> bool:
        raise EditorError("timed out")


def _read(root: Path, path: str, line: int | None = None, limit: int | None = None) -> str:
    return asyncio.run(acp_fs.read_text_file(NoEditor(), root, path, line, limit))


def _write(root: Path, path: str, content: str, read_only: bool = False) -> Path:
    return asyncio.run(acp_fs.write_text_file(NoEditor(), root, path, content,
                                              read_only=read_only))


def test_read_whole_file_and_line_ranges(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\nfour\n")
    assert _read(tmp_path, str(tmp_path / "a.txt")) == "one\ntwo\nthree\nfour\n"
    assert _read(tmp_path, "a.txt", line=2, limit=2) == "two\nthree\n"
    assert _read(tmp_path, "a.txt", line=4) == "four\n"
    assert acp_fs._slice("one\ntwo\nthree", 2, 1) == "two\n"


def test_read_refuses_escapes_binaries_and_fifos_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret").write_text("s")
    (root / "link").symlink_to(tmp_path / "secret")
    (root / "bin").write_bytes(b"\x00\x01")
    os.mkfifo(root / "fifo")
    for path, why in [("../secret", "outside the workspace root"),
                      ("link", "outside the workspace root"),
                      ("bin", "binary"), ("fifo", "FIFO"), ("none", "no such file")]:
        with pytest.raises(acp_fs.FsRefused, match=why):
            _read(root, path)


def test_write_refuses_read_only_git_and_escapes_and_loses_nothing(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "keep.txt").write_text("keep")
    with pytest.raises(acp_fs.FsRefused, match="read-only"):
        _write(tmp_path, "keep.txt", "changed", read_only=True)
    with pytest.raises(acp_fs.FsRefused, match=r"\.git"):
        _write(tmp_path, ".git/hooks/pre-commit", "#!/bin/sh\n")
    with pytest.raises(acp_fs.FsRefused, match="outside the workspace root"):
        _write(tmp_path, "/tmp/escape.txt", "x")
    assert (tmp_path / "keep.txt").read_text() == "keep"
    assert not (tmp_path / ".git" / "hooks").exists()
    assert _write(tmp_path, "sub/new.txt", "made") == (tmp_path / "sub" / "new.txt").resolve()
    assert (tmp_path / "sub" / "new.txt").read_text() == "made"
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["new.txt"]  # no temp file left


def test_an_editor_that_fails_refuses_rather_than_writing_under_its_buffer(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("disk")
    with pytest.raises(acp_fs.FsRefused, match="editor could not write"):
        asyncio.run(acp_fs.write_text_file(FailingEditor(), tmp_path, "a.txt", "x",
                                           read_only=False))
    with pytest.raises(acp_fs.FsRefused, match="editor could not give"):
        asyncio.run(acp_fs.read_text_file(FailingEditor(), tmp_path, "a.txt"))
    assert (tmp_path / "a.txt").read_text() == "disk"


def test_kept_output_starts_on_a_character() -> None:
    data = bytearray("é" * 10, "utf-8")
    kept, cut = _kept(data, 5)
    assert cut and kept.decode("utf-8") == "éé"


def test_terminal_streams_output_while_it_runs(tmp_path: Path) -> None:
    async def scenario() -> tuple[str, str, ExitStatus]:
        terms = Terminals()
        t = await terms.create(tmp_path, "echo first; sleep 0.6; echo second")
        for _ in range(100):
            if "first" in t.output()[0]:
                break
            await asyncio.sleep(0.02)
        early = t.output()[0]
        status = await t.wait()
        late = t.output()[0]
        await terms.close()
        return early, late, status

    early, late, status = asyncio.run(scenario())
    assert "first" in early and "second" not in early
    assert late == "first\nsecond\n"
    assert status.exit_code == 0


def test_terminal_env_cwd_args_and_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "sk-leak")
    (tmp_path / "sub").mkdir()

    async def scenario() -> list[str]:
        terms = Terminals(cap=1_000_000)
        out = []
        t = await terms.create(tmp_path, "/bin/sh", ["-c", "pwd; env"], cwd="sub",
                               env=[("CLAUDECODE", "1"), ("OTHER_TOKEN", "tok-leak")])
        await t.wait()
        out.append(t.output()[0])
        t2 = await terms.create(tmp_path, "yes | head -c 5000", limit=100)
        await t2.wait()
        text, cut = t2.output()
        out.append(f"{len(text.encode())} {cut}")
        with pytest.raises(TerminalRefused, match="outside the workspace root"):
            await terms.create(tmp_path, "true", cwd="..")
        await terms.release(t.id)
        with pytest.raises(TerminalRefused, match="no terminal"):
            terms.get(t.id)
        await terms.close()
        return out

    env_out, capped = asyncio.run(scenario())
    assert env_out.startswith(str((tmp_path / "sub").resolve()))
    assert "CLAUDECODE=1" in env_out
    assert "sk-leak" not in env_out and "tok-leak" not in env_out
    assert capped == "100 True"


def test_terminal_timeout_and_release_kill_the_whole_group(tmp_path: Path) -> None:
    async def scenario() -> tuple[ExitStatus, bool, int, int]:
        terms = Terminals(timeout=0.5)
        t = await terms.create(tmp_path, "sleep 30 & sleep 30; echo never")
        status = await asyncio.wait_for(t.wait(), 10)
        pgid = t.proc.pid
        for _ in range(50):
            if pgid not in living_groups():
                break
            await asyncio.sleep(0.05)
        gone = pgid not in living_groups()
        t2 = await terms.create(tmp_path, "sleep 30 & sleep 30")
        await terms.release(t2.id)
        pgid2 = t2.proc.pid
        await asyncio.sleep(0.2)
        return status, t.timed_out and gone, pgid2, len(living_groups().get(pgid2, []))

    status, timed_out, _pgid, left = asyncio.run(scenario())
    assert status.signal == "SIGKILL"
    assert timed_out
    assert left == 0
