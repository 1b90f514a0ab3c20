"""The terminal path cannot be skipped: a journal write that fails
(disk full, read-only file system) still ends the turn, says why, releases the session,
and the journal is repaired once the disk is back. Real journal, real fake server; the
disk fault comes through the journal's I/O seam."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.store.journal import Journal, JournalIO
from tandem.turns.engine import TurnSpec


class FillingDisk(JournalIO):
    """A disk that fills up at the first write of an entry of type TRIGGER, and stays full."""

    def __init__(self, trigger: str, code: int = errno.ENOSPC) -> None:
        super().__init__()
        self.trigger = f'"type":"{trigger}"'.encode()
        self.code = code
        self.full = False

    def write(self, fd: int, data: bytes) -> int:
        if self.trigger in data:
            self.full = True
        if self.full:
            raise OSError(self.code, os.strerror(self.code))
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.full:
            raise OSError(self.code, os.strerror(self.code))
        os.fsync(fd)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@dataclass
class Backend:
    """One session on a real journal whose disk fills up, and a fake model."""

    app: App
    events: RecordingSink
    sid: str
    disk: FillingDisk
    fake: FakeOpenAI

    @property
    def engine(self) -> Any:
        return self.app.turns.engine

    async def send(self, text: str = "go") -> int:
        return int(await self.engine.accept(TurnSpec(session=self.sid, text=text,
                                                     provider="openai:m")))


@contextlib.asynccontextmanager
async def backend(home: Path, project: Path, monkeypatch: pytest.MonkeyPatch,
                  replies: list[Reply], trigger: str,
                  code: int = errno.ENOSPC) -> AsyncIterator[Backend]:
    """A `Backend` whose disk fills at the first entry of type TRIGGER."""
    events = RecordingSink()
    app = App(home=home, events=events)
    with FakeOpenAI(replies) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
        info = await new(app, NewParams(cwd=str(project)))
        disk = FillingDisk(trigger, code)
        app.sessions.journal(info.id).io = disk
        try:
            yield Backend(app, events, info.id, disk, fake)
        finally:
            await app.turns.aclose()
    app.sessions.manager.close()


def _ended(events: RecordingSink) -> list[dict[str, Any]]:
    return [p for _, kind, p in events.events if kind == "turn-ended"]


def _ends(journal: Journal) -> list[dict[str, Any]]:
    return [e.model_dump() for e in journal.entries() if e.type == "turn_end"]


@pytest.mark.parametrize(("code", "reason"), [(errno.ENOSPC, "disk full: "),
                                              (errno.EROFS, "read-only file system: ")])
def test_a_full_disk_mid_turn_still_ends_the_turn_failed_and_releases_the_session(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        code: int, reason: str) -> None:
    async def main() -> None:
        replies = [Reply(text="an answer the disk cannot hold"), Reply(text="second answer")]
        async with backend(tmp_path / "home", project, monkeypatch, replies, "assistant",
                           code) as b:
            turn = await b.send()
            ended = await asyncio.wait_for(b.engine.wait(b.sid, turn), 30)
            assert ended.outcome == "failed"
            assert ended.error is not None and ended.error.startswith(reason), ended.error
            (event,) = _ended(b.events)
            assert event["outcome"] == "failed" and event["error"] == ended.error
            status = b.engine.status(b.sid, turn).model_dump()
            assert status["state"] == "ended" and status["outcome"] == "failed"
            assert status["error"] == ended.error
            assert b.sid not in b.engine.running  # released
            # Still full: a new send is refused with the same clear reason.
            with pytest.raises(TandemError) as err:
                await b.send("again")
            assert err.value.message.startswith(reason)
            assert b.engine.status(b.sid, turn).model_dump()["outcome"] == "failed"
            # The disk is back: the next send works, and turn 1 is closed first.
            b.disk.full, b.disk.trigger = False, b"\0never"
            second = await b.send("again")
            assert second == turn + 1
            assert (await b.engine.wait(b.sid, second)).outcome == "succeeded"
            journal = b.app.sessions.journal(b.sid)
            ends = _ends(journal)
            assert [(e["turn"], e["outcome"]) for e in ends] == [(1, "failed"), (2, "succeeded")]
            assert ends[0]["error"].startswith(reason)
            types = [e.type for e in journal.entries()]
            assert types.index("turn_end") < len(types) - 1 - types[::-1].index("turn_start")

    asyncio.run(main())


def test_after_a_full_disk_and_a_restart_the_open_turn_is_closed_and_status_is_true(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"

    async def first_life() -> str:
        # The backend goes away with the disk still full.
        async with backend(home, project, monkeypatch, [Reply(text="lost")], "assistant") as b:
            assert (await b.engine.wait(b.sid, await b.send())).outcome == "failed"
            return b.sid

    sid = asyncio.run(first_life())

    async def second_life() -> None:
        app = App(home=home, events=RecordingSink())
        service = app.turns
        status = service.engine.status(sid, 1).model_dump()
        assert status["state"] == "ended" and status["outcome"] in ("aborted", "failed")
        ends = _ends(app.sessions.journal(sid))
        assert [e["turn"] for e in ends] == [1]  # repaired on this first touch
        app.sessions.manager.close()

    asyncio.run(second_life())


def test_a_disk_full_before_the_turn_starts_refuses_the_send_cleanly(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with backend(tmp_path / "home", project, monkeypatch, [Reply(text="ok")],
                           "turn_start") as b:
            with pytest.raises(TandemError) as err:
                await b.send()
            assert err.value.code == "io" and err.value.message.startswith("disk full: ")
            assert not b.engine.running and b.app.gate.holder(b.sid) is None
            assert not _ended(b.events)  # no turn was accepted, so none ends
            b.disk.full, b.disk.trigger = False, b"\0never"
            turn = await b.send()
            assert turn == 1
            assert (await b.engine.wait(b.sid, turn)).outcome == "succeeded"

    asyncio.run(main())


def test_a_disk_full_right_after_turn_start_ends_that_turn(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with backend(tmp_path / "home", project, monkeypatch, [Reply(text="ok")],
                           "user") as b:
            turn = await b.send()
            ended = await b.engine.wait(b.sid, turn)
            assert ended.outcome == "failed" and (ended.error or "").startswith("disk full: ")
            kinds = [k for _, k, _ in b.events.events]
            assert kinds.count("turn-started") == 1 and kinds.count("turn-ended") == 1
            assert b.engine.status(b.sid, turn).model_dump()["outcome"] == "failed"
            assert b.fake.api_requests("/v1/chat/completions") == []  # the model never asked

    asyncio.run(main())


class CountingDisk(FillingDisk):
    """A disk that never fills, counting fsyncs and where they fall among the writes."""

    def __init__(self) -> None:
        super().__init__("\0never")
        self.log: list[str] = []

    def write(self, fd: int, data: bytes) -> int:
        self.log.append(data.split(b'"type":"', 1)[1].split(b'"', 1)[0].decode())
        return super().write(fd, data)

    def fsync(self, fd: int) -> None:
        self.log.append("fsync")
        super().fsync(fd)


def test_one_fsync_a_turn_after_its_last_entry(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sync before a turn's first entry finds nothing unsynced after the previous
    turn's end; a turn's own entries are durable before its ``turn-ended``."""
    async def main() -> None:
        async with backend(tmp_path / "home", project, monkeypatch,
                           [Reply(text="one"), Reply(text="two"), Reply(text="three")],
                           "never") as b:
            disk = CountingDisk()
            b.app.sessions.journal(b.sid).io = disk
            for n in range(3):
                turn = await b.send(f"request {n}")
                assert (await asyncio.wait_for(b.engine.wait(b.sid, turn), 30)
                        ).outcome == "succeeded"
            ends = [i for i, w in enumerate(disk.log) if w == "turn_end"]
            # The first sync: entries before the disk was swapped in are not known synced.
            assert disk.log[0] == "fsync" and disk.log.count("fsync") == 1 + 3
            assert all(disk.log[i + 1] == "fsync" for i in ends)

    asyncio.run(main())
