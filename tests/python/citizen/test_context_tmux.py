"""Context from the editor, in a real terminal with a normal init file.

The user's settings file names the local test server; the project holds an
``AGENTS.md``. Then, in `emacs -nw`:

- the first request's system text carries the project instructions, and its
  turn lists them in its ``context:`` row;
- `@` in the composer completes a file with `C-M-i`; the sent request shows the
  mention as a chip and a ``context:`` row with its size, and the request the
  model gets carries the file's text *as the buffer holds it* (an unsaved edit);
- the model calls the `open_buffers` editor tool and its next request says which
  buffer is modified: Emacs answered it;
- `C-c C-a` attaches an image (the prompt shows its default folder); the
  composer shows it, the view shows its placeholder after the send, and the
  model's request carries it as an image part.

Every check reads the screen, or the requests the model server received.
"""
from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Script

from citizen.newuser import new_user, quit_emacs, shell, write_settings
from demo.test_demo_tmux import Pane


def tiny_png() -> bytes:
    """A valid one-pixel PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """The scripted OpenAI-compatible server."""
    script = Script.load({
        "default": {"text": "Nothing scripted for that."},
        "steps": [
            {"match": {"last_user_contains": "Explain"},
             "reply": {"text": "It prints a greeting."}},
            {"match": {"last_user_contains": "Which buffers"},
             "reply": {"text": "Let me look.", "tool_calls": [{
                 "name": "open_buffers", "input": {}}]}},
            {"match": {"last_user_contains": "main.py"},
             "reply": {"text": "You have main.py open, modified."}},
            {"match": {"last_user_contains": "this picture"},
             "reply": {"text": "A single pixel."}},
        ]})
    with FakeOpenAI(script) as server:
        yield server


@pytest.fixture
def user(tmp_path: Path, fake: FakeOpenAI) -> Iterator[tuple[Pane, Path]]:
    """A new user whose settings name the test server, in a project with AGENTS.md."""
    write_settings(tmp_path, fake.base_url + "/v1")
    with new_user(tmp_path, "context") as (pane, tmp):
        (tmp / "project" / "AGENTS.md").write_text("Always answer in one sentence.\n")
        (tmp / "project" / "dot.png").write_bytes(tiny_png())
        yield pane, tmp


def chat_bodies(fake: FakeOpenAI) -> list[dict[str, Any]]:
    """The chat completion bodies the model server received, oldest first."""
    return [r.body for r in fake.requests
            if r["method"] == "POST" and r.path.endswith("/chat/completions")]


def text_of(message: dict[str, Any]) -> str:
    """A chat message's text, whether its content is a string or parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def test_mentions_editor_tools_images_and_instructions(user: tuple[Pane, Path],
                                                       fake: FakeOpenAI) -> None:
    pane, tmp = user
    shell(pane, "emacs -nw main.py")
    pane.wait_for(r"main\.py +All", timeout=60)  # Emacs's mode line, not the shell line
    # An unsaved edit: the model must see it, not the file on disk.
    pane.keys("M->")
    pane.text("# unsaved-marker")
    pane.keys("M-x")
    pane.text("tandem")
    pane.keys("Enter")
    pane.wait_for(r"chat ❯", timeout=60)

    # @ completes a file of the project.
    pane.text("Explain @mai")
    pane.keys("C-M-i")
    pane.wait_for(r"Explain @main\.py", timeout=15)
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"It prints a greeting\.", timeout=60)
    assert re.search(r"context: .*@main\.py", screen), screen
    assert "AGENTS.md (instructions)" in screen, screen  # listed in the turn's context
    first = chat_bodies(fake)[0]
    system = " ".join(text_of(m) for m in first["messages"] if m["role"] == "system")
    assert "Always answer in one sentence." in system, system
    request = text_of(first["messages"][-1])
    assert "# unsaved-marker" in request and 'print("hello")' in request, request

    # The model asks Emacs which buffers are open.
    pane.text("Which buffers are open?")
    pane.keys("C-c", "C-c")
    pane.wait_for(r"You have main\.py open, modified\.", timeout=60)
    after_tool = chat_bodies(fake)[-1]["messages"]
    tool_results = [text_of(m) for m in after_tool if m["role"] == "tool"]
    assert tool_results and "main.py" in tool_results[-1], tool_results
    assert "modified" in tool_results[-1], tool_results

    # An image attached with C-c C-a: shown before sending, sent as an image part.
    pane.keys("C-c", "C-a")
    pane.wait_for(r"[Ii]mage.*project/", timeout=15)  # the prompt shows where it starts
    pane.keys("C-a", "C-k")
    pane.text(str(tmp / "project" / "dot.png"))
    pane.keys("Enter")
    pane.wait_for(r"attached: \[image: dot\.png", timeout=15)
    pane.text("What is in this picture?")
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"A single pixel\.", timeout=60)
    assert "[image: dot.png" in screen, screen
    assert "attached: [image" not in screen, screen  # the composer let it go
    last = chat_bodies(fake)[-1]["messages"][-1]
    parts = last["content"] if isinstance(last["content"], list) else []
    urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    assert urls == ["data:image/png;base64," + base64.b64encode(tiny_png()).decode()], \
        json.dumps(last)[:2000]
    quit_emacs(pane)
