"""``tandem serve`` with per-turn timers: the backend ``bench_turn`` measures.

The real server (`tandem.cli.main`, ``serve``), with a few of its functions
wrapped in timers before it starts: each turn's time in the projection, the
compaction check, the checkpoints before and after, journal writes and
syncs, event publishing and the provider call, from ``turns/send`` to the
``turn-ended`` event, and the processes it spawned (git; their command
lines too with ``TANDEM_PROBE_ARGV`` set). The totals of every turn are written as JSON to
``$TANDEM_PROBE_OUT`` when the server stops; with ``TANDEM_PROBE_PROFILE`` set
the whole run is profiled with cProfile into that file too (``.prof``).
Run by ``bench/bench_turn.py``; not part of tandem.
"""

from __future__ import annotations

import cProfile
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

TURNS: list[dict[str, float]] = []
"""One dict per ended turn: milliseconds per part, ``total`` from send to the event."""
_current: dict[str, float] = {}
_depth: dict[str, int] = {}
_spawned: list[str] = []


def _add(part: str, ms: float) -> None:
    _current[part] = _current.get(part, 0.0) + ms


def _timed(part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """FN, its time added to PART of the current turn (outermost call only)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _depth.get(part) or (part == "projection" and _depth.get("compaction check")):
            return fn(*args, **kwargs)  # counted once, in the outer part
        _depth[part] = 1
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _depth[part] = 0
            _add(part, (time.perf_counter() - t) * 1000)

    return wrapper


def _timed_async(part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The async FN, its wall time added to PART of the current turn."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        _depth[part] = _depth.get(part, 0) + 1
        t = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            _depth[part] -= 1
            _add(part, (time.perf_counter() - t) * 1000)

    return wrapper


def install() -> None:
    """Wrap the measured functions (module attributes, as the callers look them up)."""
    from tandem.history import compaction
    from tandem.providers import native
    from tandem.server import pusher
    from tandem.store import journal
    from tandem.turns import facts, service

    # The engine's journal-only facts project with this name (the service's use the cache).
    facts.project = _timed("projection", facts.project)  # type: ignore[assignment]
    from tandem.sessions.service import SessionService

    if hasattr(SessionService, "projection"):  # the incremental projection
        SessionService.projection = _timed(  # type: ignore[method-assign]
            "projection", SessionService.projection)
    compaction.CompactionService.maybe_compact = _timed_async(  # type: ignore[method-assign]
        "compaction check", compaction.CompactionService.maybe_compact)
    service.GitCheckpoints.before = _timed_async(  # type: ignore[method-assign]
        "checkpoint before", service.GitCheckpoints.before)
    service.GitCheckpoints.after = _timed_async(  # type: ignore[method-assign]
        "checkpoint after", service.GitCheckpoints.after)
    journal.Journal.append = _timed("journal writes", journal.Journal.append)  # type: ignore[method-assign]
    journal.Journal.sync = _timed("journal writes", journal.Journal.sync)  # type: ignore[method-assign]
    native.NativeProvider.run = _timed_async(  # type: ignore[method-assign]
        "provider call", native.NativeProvider.run)
    publish = _timed("events", pusher.EventPusher.publish)
    popen_init = subprocess.Popen.__init__

    def counted_popen(self: Any, *args: Any, **kwargs: Any) -> None:
        _add("processes spawned", 1.0)  # a count, not milliseconds
        if os.environ.get("TANDEM_PROBE_ARGV"):
            argv = args[0] if args else kwargs.get("args")
            _spawned.append(" ".join(str(a) for a in argv if not str(a).startswith("-"))[:90])
        popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = counted_popen  # type: ignore[method-assign]

    def publish_and_close(self: Any, session: str, event: Any) -> None:
        publish(self, session, event)
        if getattr(event, "kind", None) == "turn-ended" and "start" in _current:
            _current["total"] = (time.perf_counter() - _current.pop("start")) * 1000
            TURNS.append(dict(_current, turn=event.turn, spawned=list(_spawned)))
            _spawned.clear()
            _current.clear()

    pusher.EventPusher.publish = publish_and_close  # type: ignore[method-assign]
    import dataclasses

    from tandem.server import table

    build_table = table.build_table

    def timed_table(*args: Any, **kwargs: Any) -> Any:
        methods = build_table(*args, **kwargs)
        if "turns/send" not in methods:  # the early table (hello before the services)
            return methods
        spec = methods["turns/send"]
        send = spec.handler

        async def timed_send(app: Any, p: Any) -> Any:
            _current.clear()
            _current["start"] = time.perf_counter()
            t = time.perf_counter()
            try:
                return await send(app, p)
            finally:
                _add("send handler", (time.perf_counter() - t) * 1000)

        methods["turns/send"] = dataclasses.replace(spec, handler=timed_send)
        return methods

    table.build_table = timed_table  # type: ignore[assignment]


def main() -> int:
    """Run ``tandem serve`` with the timers; write what they measured at exit."""
    from tandem import cli

    install()
    out = Path(os.environ["TANDEM_PROBE_OUT"])
    profiler = cProfile.Profile() if os.environ.get("TANDEM_PROBE_PROFILE") else None
    sys.argv = ["tandem", "serve"]
    try:
        if profiler is not None:
            profiler.enable()
        return cli.main()
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(out.with_suffix(".prof")))
        out.write_text(json.dumps(TURNS))


if __name__ == "__main__":
    sys.exit(main())
