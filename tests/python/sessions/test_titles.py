"""Named sessions: a title from the first chat request, and the user's own (``sessions/rename``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.sessions.titles import TITLE_CHARS, title_from_request, user_title
from tandem.store.listing import list_sessions
from tandem.turns.engine import TurnSpec

from .adapter_app import call, plain_call


@pytest.mark.parametrize(("request_text", "title"), [
    ("Hello, what is this?", "Hello, what is this?"),
    ("\n\n  # Make the parser async\nand more", "Make the parser async"),
    ("- fix the tests", "fix the tests"),
    ("```python\nprint(1)\n```", "print(1)"),
    ("```\n```\nwhy does it fail", "why does it fail"),
    ("tabs\tand   spaces", "tabs and spaces"),
    ("evil\u202etxt.exe\x1b[31m", "eviltxt.exe[31m"),
    ("", ""),
    ("   \n ... \n", ""),
    ("Please refactor the configuration loader so that every layer is validated "
     "exactly once per change", "Please refactor the configuration loader so that every…"),
])
def test_title_from_request(request_text: str, title: str) -> None:
    assert title_from_request(request_text) == title
    assert len(title_from_request(request_text)) <= TITLE_CHARS


def test_a_huge_one_line_request_gives_a_short_title() -> None:
    assert len(title_from_request("x" * 5_000_000)) == TITLE_CHARS


@pytest.mark.parametrize("bad", ["", "   ", "\u202e\u200f", "\x00\x07"])
def test_a_user_title_with_nothing_visible_is_refused(bad: str) -> None:
    with pytest.raises(TandemError) as err:
        user_title(bad)
    assert err.value.code == "invalid"


def test_a_too_long_user_title_is_refused() -> None:
    with pytest.raises(TandemError):
        user_title("t" * 201)


def _use(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_the_first_chat_request_names_the_session_and_rename_replaces_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = tmp_path / "named"
    root.mkdir()
    app = App(home=tmp_path / "home")
    with FakeOpenAI([Reply(text="Sure."), Reply(text="Again.")]) as fake:
        _use(fake, monkeypatch)
        sid = call(app, "sessions/new", cwd=str(root)).id

        async def two_turns() -> None:
            engine = app.turns.engine
            try:
                for text in ("Make the parser async\nplease", "and the tests"):
                    turn = await engine.accept(TurnSpec(session=sid, text=text,
                                                        provider="openai:m"))
                    await engine.wait(sid, turn)
            finally:
                await app.turns.aclose()

        asyncio.run(two_turns())
    rows = {r.id: r for r in list_sessions(app.home, None)}
    assert rows[sid].title == "Make the parser async"  # the first request, not the second
    assert plain_call(app, "sessions/usage", session=sid)["title"] == "Make the parser async"
    renamed = call(app, "sessions/rename", session=sid, title="  Parser\nwork\u202e ")
    assert renamed.title == "Parser work"
    assert {r.id: r for r in list_sessions(app.home, None)}[sid].title == "Parser work"
    with pytest.raises(TandemError):
        call(app, "sessions/rename", session=sid, title="\u200f")
    assert {r.id: r for r in list_sessions(app.home, None)}[sid].title == "Parser work"
    app.sessions.manager.close()
