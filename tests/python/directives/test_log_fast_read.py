"""The log's one-pass read (msgspec, events built without validation) reads what the
model reads: the same events, fields set and extras, line by line as the reference
(`Event.model_validate_json`); whatever it does not take (a NaN, a lone surrogate, a
field of another type, a bad line) is read by the model as before, and named."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tandem.directives import log as log_module
from tandem.directives.log import WorkspaceLog
from tandem.directives.models import Event, exact_event


def _reference(raw: bytes) -> list[Event]:
    out = []
    for line in raw.split(b"\n")[:-1]:
        if line.strip():
            try:
                out.append(Event.model_validate_json(line))
            except ValueError:
                pass
    return out


def _same(events: list[Event], reference: list[Event]) -> None:
    # repr: a NaN is not equal to itself
    assert [repr((e.model_dump(), sorted(e.model_fields_set), e.model_extra)) for e in events
            ] == [repr((e.model_dump(), sorted(e.model_fields_set), e.model_extra))
                  for e in reference]


def _random_line(rng: random.Random, seq: int) -> dict[str, Any]:
    line: dict[str, Any] = {"kind": rng.choice(["directive_created", "bound", "attempt_recorded",
                                                "archived", "some_future_kind"]),
                            "seq": seq, "ts": "2026-12-01T16:00:00Z"}
    if rng.random() < 0.8:
        line["directive"] = rng.choice([f"D{seq}", None])
    for k in range(rng.randint(0, 3)):
        line[f"x{k}"] = rng.choice([1, 2.5, "é\u2028", None, True, [1, {"a": "b"}],
                                    {"nested": {"deep": [1.0, "x"]}}, 10**30])
    return line


def test_fast_read_equals_the_model_on_random_logs(tmp_path: Path) -> None:
    rng = random.Random(3)
    for n in range(40):
        lines = [_random_line(rng, s) for s in range(1, rng.randint(1, 60))]
        raw = b"".join(json.dumps(x, ensure_ascii=False).encode() + b"\n"
                       + (b"\n" if rng.random() < 0.1 else b"") for x in lines)
        log = WorkspaceLog(tmp_path, f"w{n}")
        log.dir.mkdir(parents=True, exist_ok=True)
        log.path.write_bytes(raw)
        assert log_module._exact_events(raw) is not None  # the fast path took it all
        _same(log.read(), _reference(raw))
        assert not log.notices


def test_what_the_fast_path_refuses_is_read_by_the_model(tmp_path: Path) -> None:
    good = b'{"kind":"bound","seq":1,"ts":"t","directive":"D1","session":"s"}\n'
    odd = [b'{"kind":"k","seq":2,"ts":"t","x":NaN}\n',  # the model reads NaN
           b'{"kind":"k","seq":"2","ts":"t"}\n',  # lax: "2" is 2
           b'{"kind":"k","seq":2.0,"ts":"t"}\n',
           b'{"kind":"k","seq":true,"ts":"t"}\n',
           b'{"kind":"k","seq":2,"ts":"t","x":"\\udc80"}\n',  # refused by both: named
           b'[1, 2]\n',  # not an event: named
           b'{"kind":"k","seq":0,"ts":"t"}\n',  # seq >= 1: named
           b'{"kind":"k","seq":2,"ts":"t","directive":7}\n']  # no str: named
    for n, line in enumerate(odd):
        raw = good + line + good.replace(b'"seq":1', b'"seq":3')
        assert log_module._exact_events(raw) is None
        log = WorkspaceLog(tmp_path, f"odd{n}")
        log.dir.mkdir(parents=True, exist_ok=True)
        log.path.write_bytes(raw)
        events = log.read()
        _same(events, _reference(raw))
        assert (len(events) == 2) == bool(log.notices)
        if log.notices:
            assert "line 2 is unreadable" in log.notices[0]


def test_an_exact_event_is_the_model_of_its_data() -> None:
    data = {"kind": "attempt_recorded", "seq": 4, "ts": "t", "attempt": {"seq": 1}}
    event = exact_event(dict(data))
    assert event is not None
    _same([event], [Event.model_validate(data)])
    assert event == Event.model_validate(data)
    assert event.body() == {"attempt": {"seq": 1}}
    assert event.model_fields_set == {"kind", "seq", "ts", "attempt"}
    assert exact_event({**data, "seq": True}) is None
    assert exact_event(["kind"]) is None


def test_appends_after_a_fast_read_extend_it(tmp_path: Path) -> None:
    log = WorkspaceLog(tmp_path, "w")
    for d in range(1, 30):
        log.append("directive_created", {"directive": f"D{d}", "request": f"r{d}"})
    first = log.read()
    log.append("archived", {"directive": "D3", "archived": True})
    again = log.read()
    assert again[:-1] == first and again[-1].kind == "archived" and again[-1].seq == 30
    log_module._cache.clear()
    _same(log.read(), _reference(log.path.read_bytes()))


def test_a_bad_line_after_a_fast_read_is_named_by_its_number(tmp_path: Path) -> None:
    log = WorkspaceLog(tmp_path, "w")
    for d in range(1, 6):
        log.append("directive_created", {"directive": f"D{d}", "request": f"r{d}"})
    with open(log.path, "ab") as f:
        f.write(b"\n")  # a blank line counts as a line
    assert len(log.read()) == 5 and not log.notices  # one pass: no line counted
    with open(log.path, "ab") as f:
        f.write(b'{"kind":"k","seq":7,"ts":"t","x":"\\udc80"}\n')
    log.append("archived", {"directive": "D1", "archived": True})
    assert [e.seq for e in log.read()] == [1, 2, 3, 4, 5, 6]
    assert len(log.notices) == 1 and "line 7 is unreadable" in log.notices[0]
