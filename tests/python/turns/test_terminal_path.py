"""The terminal path cannot be skipped (issue 12, finding 5): a journal write that fails
(disk full, read-only file system) still ends the turn, says why, releases the session,
and the journal is repaired once the disk is back. Real journal, real fake server; the
disk fault comes through the journal's I/O seam."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.sessions.api import NewParams, manager, new
from tandem.store.journal import Journal, JournalIO
from tandem.turns.engine import TurnSpec
from tandem.turns.service import turns


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
        events = RecordingSink()
        app = App(home=tmp_path / "home", events=events)
        with FakeOpenAI([Reply(text="an answer the disk cannot hold"),
                         Reply(text="second answer")]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            service = turns(app)
            journal = service.journal(info.id)
            disk = FillingDisk("assistant", code)
            journal.io = disk
            try:
                turn = await service.engine.accept(TurnSpec(session=info.id, text="go",
                                                            provider="openai:m"))
                ended = await asyncio.wait_for(service.engine.wait(info.id, turn), 30)
                assert ended.outcome == "failed"
                assert ended.error is not None and ended.error.startswith(reason), ended.error
                (event,) = _ended(events)
                assert event["outcome"] == "failed" and event["error"] == ended.error
                status = service.engine.status(info.id, turn)
                assert status["state"] == "ended" and status["outcome"] == "failed"
                assert status["error"] == ended.error
                assert info.id not in service.engine.running  # released
                # Still full: a new send is refused with the same clear reason.
                with pytest.raises(TandemError) as err:
                    await service.engine.accept(TurnSpec(session=info.id, text="again",
                                                         provider="openai:m"))
                assert err.value.message.startswith(reason)
                assert service.engine.status(info.id, turn)["outcome"] == "failed"
                # The disk is back: the next send works, and turn 1 is closed first.
                disk.full, disk.trigger = False, b"\0never"
                second = await service.engine.accept(TurnSpec(session=info.id, text="again",
                                                              provider="openai:m"))
                assert second == turn + 1
                assert (await service.engine.wait(info.id, second)).outcome == "succeeded"
            finally:
                await service.aclose()
        ends = _ends(turns(app).journal(info.id))
        assert [(e["turn"], e["outcome"]) for e in ends] == [(1, "failed"), (2, "succeeded")]
        assert ends[0]["error"].startswith(reason)
        types = [e.type for e in turns(app).journal(info.id).entries()]
        assert types.index("turn_end") < len(types) - 1 - types[::-1].index("turn_start")
        manager(app).close()

    asyncio.run(main())


def test_after_a_full_disk_and_a_restart_the_open_turn_is_closed_and_status_is_true(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"

    async def first_life() -> str:
        app = App(home=home, events=RecordingSink())
        with FakeOpenAI([Reply(text="lost")]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            service = turns(app)
            service.journal(info.id).io = FillingDisk("assistant")
            turn = await service.engine.accept(TurnSpec(session=info.id, text="go",
                                                        provider="openai:m"))
            assert (await service.engine.wait(info.id, turn)).outcome == "failed"
            await service.aclose()
        manager(app).close()  # the backend goes away with the disk still full
        return info.id

    sid = asyncio.run(first_life())

    async def second_life() -> None:
        app = App(home=home, events=RecordingSink())
        service = turns(app)
        status = service.engine.status(sid, 1)
        assert status["state"] == "ended" and status["outcome"] in ("aborted", "failed")
        ends = _ends(service.journal(sid))
        assert [e["turn"] for e in ends] == [1]  # repaired on this first touch
        manager(app).close()

    asyncio.run(second_life())


def test_a_disk_full_before_the_turn_starts_refuses_the_send_cleanly(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        events = RecordingSink()
        app = App(home=tmp_path / "home", events=events)
        with FakeOpenAI([Reply(text="ok")]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            service = turns(app)
            disk = FillingDisk("turn_start")
            service.journal(info.id).io = disk
            try:
                with pytest.raises(TandemError) as err:
                    await service.engine.accept(TurnSpec(session=info.id, text="go",
                                                         provider="openai:m"))
                assert err.value.code == "io" and err.value.message.startswith("disk full: ")
                assert not service.engine.running and not service.engine.held
                assert not _ended(events)  # no turn was accepted, so none ends
                disk.full, disk.trigger = False, b"\0never"
                turn = await service.engine.accept(TurnSpec(session=info.id, text="go",
                                                            provider="openai:m"))
                assert turn == 1
                assert (await service.engine.wait(info.id, turn)).outcome == "succeeded"
            finally:
                await service.aclose()
        manager(app).close()

    asyncio.run(main())


def test_a_disk_full_right_after_turn_start_ends_that_turn(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        events = RecordingSink()
        app = App(home=tmp_path / "home", events=events)
        with FakeOpenAI([Reply(text="ok")]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            service = turns(app)
            service.journal(info.id).io = FillingDisk("user")
            try:
                turn = await service.engine.accept(TurnSpec(session=info.id, text="go",
                                                            provider="openai:m"))
                ended = await service.engine.wait(info.id, turn)
            finally:
                await service.aclose()
        assert ended.outcome == "failed" and (ended.error or "").startswith("disk full: ")
        kinds = [k for _, k, _ in events.events]
        assert kinds.count("turn-started") == 1 and kinds.count("turn-ended") == 1
        assert service.engine.status(info.id, turn)["outcome"] == "failed"
        assert fake.api_requests("/v1/chat/completions") == []  # the model was never asked
        manager(app).close()

    asyncio.run(main())
