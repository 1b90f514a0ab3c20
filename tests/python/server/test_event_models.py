"""Every event kind has one model, the backend publishes only those, and Emacs dispatches on them.

The elisp side is read from the source: each ``(pcase (plist-get event :kind) …)``
dispatch table, each ``(equal (plist-get event :kind) "…")`` test and the
overview's list of state kinds. A kind Emacs handles that the backend has no
model for (or a field a handler reads that its model lacks) fails here, as
does a model the server could send that no handler knows.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tandem.protocol import sexp
from tandem.protocol.events import (
    EVENTS,
    AnyEvent,
    Delta,
    EntryEvent,
    Event,
    InteractionEvent,
    TurnEndedEvent,
    TurnStarted,
    delta,
    fields,
    kind_of,
    payload,
)
from tandem.server.pusher import EventPusher

ROOT = Path(__file__).resolve().parents[3]
ELISP = ROOT / "elisp"
PYTHON = ROOT / "python" / "tandem"
ENVELOPE = {"session", "seq", "kind"}
"""Keys the server adds to every event."""


def _subclasses(cls: type[Event]) -> set[type[Event]]:
    out: set[type[Event]] = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


def _form_end(text: str, start: int) -> int:
    """Index just past the form opening at START (strings, comments, ?chars skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == ";":
            i = text.index("\n", i)
        elif c == "?":
            i += 2 if text[i + 1] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise AssertionError(f"unbalanced form at {start}")


def _clauses(form: str) -> list[tuple[str, str]]:
    """(kind, clause text) of each ``("kind" …)`` clause at the top of a pcase FORM."""
    out: list[tuple[str, str]] = []
    i = form.index(":kind)") + len(":kind)")
    while True:
        m = re.compile(r'\s*\("([a-z-]+)"').match(form, i)
        if m is None:
            nxt = form.find("(", i)
            if nxt < 0 or nxt >= len(form) - 1:
                return out
            i = _form_end(form, nxt)
            continue
        end = _form_end(form, m.start() + m.group(0).index("("))
        out.append((m.group(1), form[m.start():end]))
        i = end


def elisp_dispatch() -> dict[str, set[str]]:
    """Kind -> the event fields its elisp handlers read, over every elisp file."""
    kinds: dict[str, set[str]] = {}
    for path in sorted(ELISP.glob("*.el")):
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"\(pcase \(plist-get event :kind\)", text):
            for kind, clause in _clauses(text[m.start():_form_end(text, m.start())]):
                fields = set(re.findall(r"\(plist-get event :([a-z-]+)\)", clause))
                kinds.setdefault(kind, set()).update(fields)
        for kind in re.findall(r'\(equal \(plist-get event :kind\) "([a-z-]+)"\)', text):
            kinds.setdefault(kind, set())
        for m in re.finditer(r"\(defconst tandem-overview--state-kinds '\(([^)]*)\)", text):
            for kind in re.findall(r'"([a-z-]+)"', m.group(1)):
                kinds.setdefault(kind, set())
    return kinds


def test_every_event_model_is_registered_under_its_kind() -> None:
    assert _subclasses(Event) | {Delta} == set(EVENTS.values())
    assert all(EVENTS[kind].kind == kind for kind in EVENTS if kind != "delta")
    assert kind_of(delta(1, "text", "x")) == "delta"


def test_the_elisp_dispatch_tables_are_found() -> None:
    # The scanner itself: the view's table has every kind a session buffer shows.
    found = elisp_dispatch()
    assert {"turn-started", "delta", "entry", "interaction", "turn-ended"} <= set(found)
    assert {"stream", "text"} <= found["delta"]
    assert {"interaction-id", "title", "options"} <= found["interaction"]


def test_every_kind_emacs_dispatches_on_has_a_model_with_the_fields_it_reads() -> None:
    for kind, read in elisp_dispatch().items():
        assert kind in EVENTS, f"Emacs handles {kind!r}, which the backend never sends"
        known = {f.replace("_", "-") for f in fields(kind)} | ENVELOPE
        assert read <= known, (kind, read - known)


def test_every_kind_the_backend_sends_has_a_handler_in_emacs() -> None:
    # resync is not dispatched: its seq jump runs the gap hook (tandem-client.el).
    assert set(EVENTS) - {"resync"} <= set(elisp_dispatch())


def test_every_publish_site_builds_a_registered_event() -> None:
    """The event passed to each ``publish(session, EVENT)`` is a registered model's call."""
    names = {cls.__name__ for cls in EVENTS.values()}
    sites = 0
    for path in PYTHON.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # A sink's own ``publish`` passing its EVENT on (the server's `Tee`) is no site.
        forwarded = {id(call) for fn in ast.walk(tree)
                     if isinstance(fn, ast.FunctionDef) and fn.name == "publish"
                     for call in ast.walk(fn) if isinstance(call, ast.Call)
                     and len(call.args) == 2 and isinstance(call.args[1], ast.Name)
                     and call.args[1].id == "event"
                     and [a.arg for a in fn.args.args] == ["self", "session", "event"]}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "publish") or id(node) in forwarded:
                continue
            sites += 1
            assert len(node.args) == 2, f"{path}:{node.lineno}: publish(session, event)"
            event = node.args[1]
            assert isinstance(event, ast.Call) and isinstance(event.func, ast.Name), (
                f"{path}:{node.lineno}: build the event in the call")
            assert event.func.id in names | {"_sample", "delta", "delta_event"}, (
                f"{path}:{node.lineno}: {event.func.id} is not an event model")
    assert sites >= 10


def _sent(event: AnyEvent) -> str:
    """What the pusher sends for EVENT (before the outbox numbers it)."""
    pusher = EventPusher()
    pusher.publish("s1", event)
    (pending,) = pusher._queue
    encoded = pending.encode()
    assert encoded is not None
    return encoded.decode("utf-8")


def test_the_server_sends_each_event_as_its_fields_plus_session_and_kind() -> None:
    samples: list[AnyEvent] = [
        TurnStarted(turn=3, origin="directive", provider="openai:gpt-4o", model="gpt-4o",
                    directive="D1"),
        delta(3, "reasoning", "hmm"),
        EntryEvent(entry={"type": "user", "seq": 4, "ts": "t", "turn": 3, "text": "hi"}),
        InteractionEvent(turn=3, interaction_id="3.1", title="Run ls", tool="shell",
                         options=[{"id": "allow_once", "label": "Allow once", "key": "y"}]),
        TurnEndedEvent(turn=3, outcome="failed", error="boom", files_changed=["a.py"]),
    ]
    assert {kind_of(e) for e in samples} == set(EVENTS) - {"resync"}
    for event in samples:
        expected = {"session": "s1", "kind": kind_of(event), **payload(event)}
        assert set(payload(event)) == set(fields(kind_of(event)))
        assert _sent(event) == sexp.dumps(expected)
        assert sexp.loads(_sent(event))["kind"] == kind_of(event)
