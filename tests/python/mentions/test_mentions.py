"""@ mentions resolved at send time, and project instructions.

The resolver runs on real files in a temporary project (caps, outside the
root, a symlink out, a binary file, a line range, a buffer's unsaved text,
directive and turn mentions); then whole chat turns run through the real
app against the fake OpenAI server (real HTTP): the request the server
receives carries a mentioned file's text and the project's AGENTS.md in
its system text, the journal records the mention without a second copy,
and an unknown ``@D99`` refuses the request before anything is sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.adapters import turns as turn_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.config.agent_files import instructions_text, project_instructions
from tandem.config.model import MentionSettings, SettingsModel
from tandem.events import RecordingSink
from tandem.mentions.resolve import parse, resolve
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.protocol.turns import SendParams, TurnParams
from tandem.store.entry_cache import journal_dicts

LIMITS = MentionSettings()


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    (root / "main.py").write_text("print('hello from main')\n")
    (root / "src" / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    return root


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_file_mention_attaches_its_text_and_records_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    got = run(resolve("look at @main.py, and mind @dataclass", root, LIMITS))
    assert "print('hello from main')" in got.text
    assert "### @main.py (file main.py, 25 bytes)" in got.text
    [rec] = got.records  # @dataclass names no file: plain text
    assert rec["kind"] == "file" and rec["path"] == "main.py" and rec["size"] == 25
    assert rec["digest"] == hashlib.sha256(b"print('hello from main')\n").hexdigest()
    assert rec["truncated"] is False


def test_a_line_range_attaches_those_lines_only(tmp_path: Path) -> None:
    root = project(tmp_path)
    got = run(resolve("see @src/a.py#L3-5.", root, LIMITS))
    assert "line 3\nline 4\nline 5\n" in got.text and "line 6" not in got.text
    assert got.records[0]["lines"] == [3, 5]


def test_the_per_mention_cap_cuts_and_says_so(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "big.txt").write_text("x" * 5000)
    got = run(resolve("@big.txt", root, MentionSettings(max_bytes=100)))
    assert got.records[0]["truncated"] is True and got.records[0]["sent"] == 100
    assert got.records[0]["size"] == 5000
    assert "cut at 100 bytes" in got.text and "x" * 101 not in got.text


def test_over_the_total_cap_nothing_is_sent(tmp_path: Path) -> None:
    root = project(tmp_path)
    with pytest.raises(TandemError) as e:
        run(resolve("@main.py @src/a.py", root, MentionSettings(total_bytes=60)))
    assert "mentions.total_bytes" in e.value.message and "nothing was sent" in e.value.message


def test_a_path_outside_the_root_is_refused_with_a_sentence(tmp_path: Path) -> None:
    root = project(tmp_path)
    (tmp_path / "secret.txt").write_text("the secret\n")
    with pytest.raises(TandemError) as e:
        run(resolve("read @../secret.txt", root, LIMITS))
    assert e.value.code == "invalid"
    assert "@../secret.txt: ../secret.txt is outside the project" in e.value.message
    with pytest.raises(TandemError):
        run(resolve(f"read @{tmp_path / 'secret.txt'}", root, LIMITS))


def test_a_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path)
    (tmp_path / "secret.txt").write_text("the secret\n")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    with pytest.raises(TandemError) as e:
        run(resolve("read @link.txt", root, LIMITS))
    assert "symlink that leads outside the project" in e.value.message
    assert "the secret" not in e.value.message


def test_a_binary_file_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    with pytest.raises(TandemError) as e:
        run(resolve("@blob.bin", root, LIMITS))
    assert "blob.bin is a binary file" in e.value.message


def test_a_visiting_buffer_gives_its_unsaved_text(tmp_path: Path) -> None:
    root = project(tmp_path)
    asked: list[Path] = []

    async def buffer_text(path: Path) -> str | None:
        asked.append(path)
        return "print('unsaved edit')\n"

    got = run(resolve("@main.py", root, LIMITS, buffer_text=buffer_text))
    assert "unsaved edit" in got.text and "hello from main" not in got.text
    assert asked == [(root / "main.py").resolve()]


def test_directive_and_turn_mentions(tmp_path: Path) -> None:
    root = project(tmp_path)

    def directive_text(d: str) -> str:
        if d != "D3":
            raise TandemError("not-found", f"@{d}: no directive {d}; nothing was sent")
        return "Request:\nmake it async"

    got = run(resolve("like @D3 and @T1", root, LIMITS, directive_text=directive_text,
                      turn_text=lambda n: "Request:\nq\n\nAnswer:\na" if n == 1 else None))
    assert [r["kind"] for r in got.records] == ["directive", "turn"]
    assert "make it async" in got.text and "Answer:\na" in got.text
    with pytest.raises(TandemError) as e:
        run(resolve("@D99", root, LIMITS, directive_text=directive_text))
    assert e.value.code == "not-found" and "D99" in e.value.message
    with pytest.raises(TandemError) as e:
        run(resolve("@T7", root, LIMITS, turn_text=lambda n: None))
    assert "no turn 7" in e.value.message


def test_parse_leaves_addresses_and_unknown_words_alone(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert [m.token for m in parse("mail me@main.py, @main.py @main.py @nothing", root)] == [
        "main.py"]


def test_instructions_from_the_session_folder_up_to_the_project_root(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    sub = root / "pkg"
    (root / ".git").mkdir(parents=True)
    sub.mkdir()
    (root / "AGENTS.md").write_text("Use tabs.\n")
    (sub / "CLAUDE.md").write_text("Be brief.\n")
    (tmp_path / "AGENTS.md").write_text("outside the project\n")
    os.symlink(tmp_path / "AGENTS.md", sub / "AGENTS.md")  # a link out: left out
    names, cap = SettingsModel().instruction_files()
    found = project_instructions(sub, names, cap)
    assert [i.path for i in found] == ["AGENTS.md", "pkg/CLAUDE.md"]
    text = instructions_text(found)
    assert "Use tabs." in text and "Be brief." in text and "outside" not in text
    assert [i.text for i in project_instructions(sub, names, 4)] == ["Use "]


# -- whole turns against the fake OpenAI server --------------------------------------------


def turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root: Path, text: str | list[str],
         replies: list[Reply], before: Callable[[App], None] | None = None
         ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Send TEXT (each of a list, in turn) as chat turns in ROOT, after BEFORE(app);
    the bodies the server got, the journal, the error."""
    events = RecordingSink()
    bodies: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    error = ""

    async def main() -> None:
        nonlocal error
        app = App(home=tmp_path / "home", events=events)
        with FakeOpenAI(replies) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
            app.turns.config.default_provider = "openai:m"
            info = await new(app, NewParams(cwd=str(root)))
            if before is not None:
                before(app)
            try:
                for one in [text] if isinstance(text, str) else text:
                    sent = await turn_api.send(app, SendParams(session=info.id, text=one))
                    await turn_api.wait(app, TurnParams(session=info.id, turn=sent.turn,
                                                        timeout=30))
            except TandemError as e:
                error = e.message
            finally:
                await app.turns.aclose()
                bodies.extend(r.body for r in fake.api_requests("/v1/chat/completions"))
                entries.extend(journal_dicts(app.sessions.journal(info.id)))
                app.sessions.close()

    asyncio.run(main())
    return bodies, entries, error


def test_a_turn_sends_the_mentioned_file_and_the_agents_md(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    (root / "AGENTS.md").write_text("Always answer in French.\nset default_provider to acp:x\n")
    bodies, entries, error = turn(tmp_path, monkeypatch, root, ["explain @main.py", "and?"],
                                  [Reply(text="ok"), Reply(text="ok again")])
    assert error == ""
    body, second = bodies
    # The next request replays the first as it was sent: text, then what it attached.
    assert second["messages"][1] == body["messages"][-1]
    system = body["messages"][0]
    assert system["role"] == "system" and "Always answer in French." in system["content"]
    user = body["messages"][-1]["content"]
    assert user.startswith("explain @main.py") and "print('hello from main')" in user
    entry = next(e for e in entries if e["type"] == "user")
    assert entry["text"] == "explain @main.py"
    kinds = [(r["kind"], r.get("path")) for r in entry["context"]]
    assert kinds == [("file", "main.py"), ("instructions", "AGENTS.md")]
    # The file's bytes are in the journal once (what later requests send), never in a record.
    line = json.dumps(entry)
    assert line.count("hello from main") == 1
    assert "French" not in json.dumps(entry["context"])
    # A line of AGENTS.md is text for the model: the provider stays the one configured.
    assert {e["provider"] for e in entries if e["type"] == "turn_start"} == {"openai:m"}


def test_an_unknown_directive_refuses_before_anything_is_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    bodies, entries, error = turn(tmp_path, monkeypatch, root, "do it like @D99",
                                  [Reply(text="never")])
    assert "@D99" in error and "nothing was sent" in error
    assert bodies == [] and not [e for e in entries if e["type"] == "turn_start"]


def test_directive_and_turn_mentions_in_real_turns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """@D1 reads the directive from the project's workspace; @T1 the session's turn 1."""
    root = project(tmp_path)

    def make_directive(app: App) -> None:
        svc = app.workspaces
        svc.create(svc.open(str(root)), "main.py", 1, 1, "print('hello from main')\n",
                   "Greet in upper case", [])

    bodies, _entries, error = turn(
        tmp_path, monkeypatch, root, ["first question", "as @D1 says, and like @T1"],
        [Reply(text="first answer"), Reply(text="ok")], before=make_directive)
    assert error == ""
    last = bodies[-1]["messages"][-1]["content"]
    assert "Greet in upper case" in last and "print('hello from main')" in last
    assert "Request:\nfirst question\n\nAnswer:\nfirst answer" in last
    # The next request's context keeps what turn 2 attached, as it was sent.
    assert last.startswith("as @D1 says, and like @T1\n\nMentioned in this request")
