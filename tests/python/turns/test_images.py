"""Images in a request: checked, kept by digest, sent in each API's own wire format.

Through the real `turns/send` handler, engine and journal, against the fake
OpenAI and Anthropic servers (real wire formats): the request the server
receives carries the image with its media type and the base64 of its bytes;
the journal holds the digest, never the bytes; the bytes are a 0600 file of
the image store; a later turn sends the image again from the store; a bad
image (not an image, too big, a symlink out of the project) is refused with
nothing written.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.http_base import FakeServer
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.adapters import turns as turn_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.protocol.turns import SendParams
from tandem.sessions.compaction import render_transcript
from tandem.sessions.fork import fork
from tandem.sessions.projection import project as project_entries
from tandem.store.entry_cache import journal_dicts
from tandem.store.images import DEFAULT_MAX_BYTES, ImageStore, digest_of


def tiny_png() -> bytes:
    """A valid 1x1 PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


_ENDPOINTS: dict[str, tuple[type[FakeServer], str, str]] = {
    "openai": (FakeOpenAI, "OPENAI", "/v1"), "anthropic": (FakeAnthropic, "ANTHROPIC", "")}


@contextmanager
def serving(family: str, script: list[Reply], monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[FakeServer]:
    """The fake server of FAMILY playing SCRIPT, with the backend's variables naming it."""
    server, prefix, suffix = _ENDPOINTS[family]
    with server(script) as fake:
        monkeypatch.setenv(f"{prefix}_BASE_URL", fake.base_url + suffix)
        monkeypatch.setenv(f"{prefix}_API_KEY", "sk-test")
        yield fake


def _images_sent(family: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(media type, base64 data) of every image in the request BODY, in order."""
    out: list[tuple[str, str]] = []
    for m in body["messages"]:
        content = m.get("content")
        for part in content if isinstance(content, list) else []:
            if family == "anthropic" and part.get("type") == "image":
                assert part["source"]["type"] == "base64"
                out.append((part["source"]["media_type"], part["source"]["data"]))
            elif family == "openai" and part.get("type") == "image_url":
                url = part["image_url"]["url"]
                head, data = url.split(",", 1)
                assert head.startswith("data:") and head.endswith(";base64")
                out.append((head[len("data:"):-len(";base64")], data))
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "shot.png").write_bytes(tiny_png())
    return root


@pytest.mark.parametrize("family", ["anthropic", "openai"])
def test_an_image_goes_to_the_provider_and_the_journal_holds_its_digest(
        family: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    png = tiny_png()
    b64 = base64.b64encode(png).decode()
    script = [Reply(text="A green pixel."), Reply(text="Still green.")]

    async def main() -> tuple[list[dict[str, Any]], App, str]:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with serving(family, script, monkeypatch) as fake:
            sid = (await new(app, NewParams(cwd=str(project)))).id
            try:
                first = await turn_api.send(app, SendParams(
                    session=sid, text="What is in it?", provider=f"{family}:m",
                    images=[{"path": str(project / "shot.png")}]))
                ended = await app.turns.engine.wait(sid, first.turn)
                assert ended.outcome == "succeeded", ended.error
                second = await turn_api.send(app, SendParams(
                    session=sid, text="And now?", provider=f"{family}:m"))
                ended = await app.turns.engine.wait(sid, second.turn)
                assert ended.outcome == "succeeded", ended.error
            finally:
                await app.turns.aclose()
            return [r.body for r in fake.requests if r["method"] == "POST"], app, sid

    bodies, app, sid = asyncio.run(main())
    # The first request carries the image with its media type and bytes ...
    assert _images_sent(family, bodies[0]) == [("image/png", b64)]
    # ... and the second sends it again, read back from the store by digest.
    assert _images_sent(family, bodies[1]) == [("image/png", b64)]
    journal = app.sessions.journal(sid)
    text = journal.path.read_text()
    assert b64 not in text  # the journal holds no bytes
    users = [e for e in journal_dicts(journal) if e["type"] == "user"]
    assert users[0]["images"] == [{"digest": digest_of(png), "media_type": "image/png",
                                   "size": len(png), "name": "shot.png"}]
    assert "images" not in users[1]
    store = ImageStore(tmp_path / "home")
    kept = store.path(digest_of(png))
    assert kept.read_bytes() == png
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700


def _refused(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch,
             images: list[dict[str, str]], provider: str = "anthropic:m") -> TandemError:
    """Send IMAGES; the refusal, after checking that nothing was written or sent."""
    async def main() -> TandemError:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with serving("anthropic", [Reply(text="never")], monkeypatch) as fake:
            sid = (await new(app, NewParams(cwd=str(project)))).id
            try:
                with pytest.raises(TandemError) as err:
                    await turn_api.send(app, SendParams(session=sid, text="look",
                                                        provider=provider, images=images))
            finally:
                await app.turns.aclose()
            assert not [r for r in fake.requests if r["method"] == "POST"]
        kinds = [e["type"] for e in journal_dicts(app.sessions.journal(sid))]
        assert "user" not in kinds and "turn_start" not in kinds, kinds
        assert not (tmp_path / "home" / "images").exists()
        return err.value
    return asyncio.run(main())


def test_a_file_that_is_not_an_image_is_refused(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "notes.png").write_text("just text, named like an image\n")
    err = _refused(tmp_path, project, monkeypatch, [{"path": str(project / "notes.png")}])
    assert err.code == "invalid"
    assert "notes.png" in err.message and "not a PNG, JPEG, GIF or WebP" in err.message


def test_an_image_over_the_size_limit_is_refused(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tiny_png() + b"\x00" * DEFAULT_MAX_BYTES
    err = _refused(tmp_path, project, monkeypatch,
                   [{"data": base64.b64encode(big).decode(), "name": "big.png"}])
    assert err.code == "invalid"
    assert "big.png" in err.message and "5.0 MiB" in err.message
    assert "image_max_bytes" in err.message


def test_a_symlink_out_of_the_project_is_refused_but_a_chosen_outside_file_is_read(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "elsewhere.png"
    outside.write_bytes(tiny_png())
    os.symlink(outside, project / "link.png")
    err = _refused(tmp_path, project, monkeypatch, [{"path": str(project / "link.png")}])
    assert err.code == "invalid" and "outside the workspace root" in err.message
    # The user's own explicit choice outside the project is fine.
    from tandem.protocol.turns import ImageInput
    from tandem.turns.images import read_attachments
    got = read_attachments([ImageInput(path=str(outside))], project, {})
    assert got[0].media_type == "image/png" and got[0].name == "elsewhere.png"


def test_a_fifo_in_the_project_is_refused(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(project / "pipe.png")
    err = _refused(tmp_path, project, monkeypatch, [{"path": str(project / "pipe.png")}])
    assert err.code == "invalid" and "FIFO" in err.message


def test_a_wire_that_cannot_take_images_refuses_before_anything_is_sent(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.providers.anthropic import AnthropicWire
    monkeypatch.setattr(AnthropicWire, "takes_images", False)
    err = _refused(tmp_path, project, monkeypatch, [{"path": str(project / "shot.png")}])
    assert err.code == "unsupported"
    assert "cannot take images" in err.message and err.message.count(".") <= 1


def test_magic_bytes_decide_the_media_type() -> None:
    from tandem.store.images import media_type
    assert media_type(tiny_png()) == "image/png"
    assert media_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert media_type(b"GIF89a....") == "image/gif"
    assert media_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert media_type(b"RIFF\x00\x00\x00\x00WAVE") is None
    assert media_type(b"<svg/>") is None


def test_missing_bytes_and_old_images_become_markers(tmp_path: Path) -> None:
    from tandem.providers.anthropic import AnthropicWire
    from tandem.providers.base import ImageRef, Message
    from tandem.providers.credentials import Credentials
    from tandem.turns.images import MAX_CONTEXT_IMAGES, with_image_data
    store = ImageStore(tmp_path / "home")
    png = tiny_png()
    digest = store.put(png)
    ref = ImageRef(digest=digest, media_type="image/png", size=len(png), name="a.png")
    gone = ImageRef(digest="0" * 64, media_type="image/png", size=9, name="gone.png")
    messages = [Message(role="user", text=f"t{i}", images=[ref]) for i in range(MAX_CONTEXT_IMAGES)]
    messages = [Message(role="user", text="old", images=[ref]), *messages,
                Message(role="user", text="now", images=[gone])]
    filled = with_image_data(messages, store)
    assert filled[0].images[0].data == "" and "not sent again" in filled[0].images[0].note
    assert all(m.images[0].data for m in filled[1:-1])
    assert "no longer in the image store" in filled[-1].images[0].note
    wire = AnthropicWire(Credentials(family="anthropic", base_url="http://127.0.0.1:1"))
    out = wire.initial_messages(filled)
    blocks = json.dumps(out)
    assert "[image gone.png (image/png, 9 bytes): no longer in the image store]" in blocks
    assert "[image a.png" in blocks  # the oldest one, as a marker


def test_rewind_fork_and_the_projection_keep_the_image_record(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    png = tiny_png()

    async def main() -> tuple[App, str]:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with serving("anthropic", [Reply(text="ok")], monkeypatch):
            sid = (await new(app, NewParams(cwd=str(project)))).id
            try:
                t = await turn_api.send(app, SendParams(
                    session=sid, text="see", provider="anthropic:m",
                    images=[{"data": base64.b64encode(png).decode(), "name": "clip.png"}]))
                await app.turns.engine.wait(sid, t.turn)
            finally:
                await app.turns.aclose()
        return app, sid

    app, sid = asyncio.run(main())
    entries = journal_dicts(app.sessions.journal(sid))
    users = [m for m in project_entries(entries) if m.role == "user"]
    assert users[0].images[0].digest == digest_of(png) and users[0].images[0].data == ""
    assert users[0].images[0].name == "clip.png"
    # A compaction's transcript names the image; the summary request sends no bytes.
    transcript = render_transcript(project_entries(entries))
    assert f"[image clip.png (image/png, {len(png)} bytes) was attached]" in transcript
    # A fork copies the record: the forked session's context has the same image.
    forked = fork(app.sessions, sid, 1).journal
    forked_users = [m for m in project_entries(journal_dicts(forked)) if m.role == "user"]
    assert forked_users[0].images == users[0].images
    # A rewind before the turn hides it, image and all.
    journal = app.sessions.journal(sid)
    journal.append({"type": "rewind", "before_turn": 1})
    assert not [m for m in project_entries(journal_dicts(journal)) if m.images]


def test_the_journal_never_supplies_bytes() -> None:
    """A hand-edited record with ``data`` is read as its four keys: bytes come from the store."""
    entries: list[Any] = [
        {"type": "turn_start", "seq": 1, "ts": "t", "turn": 1, "origin": "chat"},
        {"type": "user", "seq": 2, "ts": "t", "turn": 1, "text": "x",
         "images": [{"digest": "a" * 64, "media_type": "image/png", "size": 3, "name": "a.png",
                     "data": "cGxhbnRlZA=="}, "not a record"]}]
    [user] = project_entries(entries)
    assert [(i.name, i.data) for i in user.images] == [("a.png", "")]


def test_compaction_and_rewind_through_the_services_on_a_turn_with_an_image(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real compaction and a real rewind on a session whose first turn sent an image:
    the summary request names the image and carries no bytes; after the compaction the
    image is gone with its summarised turn; a rewind of a later turn keeps it, one of its
    own turn drops it."""
    from tandem.adapters.sessions import compact
    from tandem.protocol.sessions import CompactParams
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"compaction_keep_turns": 1}))
    png = tiny_png()
    b64 = base64.b64encode(png).decode()
    script = [Reply(text=f"answer {i}") for i in range(3)] + [Reply(text="SUMMARY-1")] + [
        Reply(text=f"later {i}") for i in range(6)]

    async def send(app: App, sid: str, text: str, images: list[dict[str, str]] | None = None
                   ) -> None:
        t = await turn_api.send(app, SendParams(session=sid, text=text, provider="openai:m",
                                                images=images or []))
        ended = await app.turns.engine.wait(sid, t.turn)
        assert ended.outcome == "succeeded", ended.error

    async def main() -> list[dict[str, Any]]:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with serving("openai", script, monkeypatch) as fake:
            try:
                sid = (await new(app, NewParams(cwd=str(project)))).id
                await send(app, sid, "one", [{"path": str(project / "shot.png")}])
                await send(app, sid, "two")
                await send(app, sid, "three")
                await compact(app, CompactParams(session=sid))
                await send(app, sid, "four")
                other = (await new(app, NewParams(cwd=str(project)))).id
                await send(app, other, "one", [{"path": str(project / "shot.png")}])
                await send(app, other, "two")
                plan = await app.rewinds.plan(other, 2)
                await app.rewinds.rewind(other, 2, plan.digest)
                await send(app, other, "two again")
                plan = await app.rewinds.plan(other, 1)
                await app.rewinds.rewind(other, 1, plan.digest)
                await send(app, other, "fresh")
            finally:
                await app.turns.aclose()
            return [r.body for r in fake.requests if r["method"] == "POST"]

    bodies = asyncio.run(main())
    summary, after_compaction = bodies[3], bodies[4]
    assert f"[image shot.png (image/png, {len(png)} bytes) was attached]" in json.dumps(summary)
    assert b64 not in json.dumps(summary) and not _images_sent("openai", summary)
    assert not _images_sent("openai", after_compaction)  # turn 1 is in the summary now
    assert _images_sent("openai", bodies[7]) == [("image/png", b64)]  # turn 1 kept
    assert not _images_sent("openai", bodies[8])  # rewound before turn 1: gone with it
