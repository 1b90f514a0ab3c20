"""A backend process that runs one directive action and then dies, for the repair tests.

Usage: ``python crash_runner.py HOME PROJECT BASE_URL MODE``. MODE ``record``
kills the process (``os._exit``) when the terminal hook is about to record
the attempt — after the boundary close and ``turn_end`` are durable. MODE
``hold`` prints ``HOLDING`` at that moment and waits to be killed. MODE
``hang`` prints ``ACCEPTED`` once the turn runs and waits to be killed.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from tandem.adapters import directives as api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.directives.service import WorkspaceService
from tandem.protocol import directives as dp
from tandem.protocol.sessions import NewParams


async def main(home: str, project: str, base_url: str, mode: str) -> None:
    app = App(home=Path(home))
    app.turns.config.credentials = {"openai": {"api_key": "sk-x", "base_url": base_url}}
    if mode in ("record", "hold"):
        def die(*_args: object, **_kw: object) -> bool:
            if mode == "hold":  # alive, holding the journal, the record not yet written
                print("HOLDING", flush=True)
                time.sleep(600)
            os._exit(9)
        WorkspaceService.record = die  # type: ignore[method-assign]
    sid = (await new(app, NewParams(cwd=project))).id
    await api.create(app, dp.CreateParams(root=project, path="a.txt", start_line=1, end_line=1,
                                           text="hello world\n", request="Make it loud"))
    reply = await api.act(app, dp.ActParams(
        root=project, id="D1", action="implement", provider="openai:fake-model",
        permission_mode="auto-edit", session=sid))
    print("ACCEPTED", reply.session, reply.turn, flush=True)
    await app.turns.engine.wait(reply.session, reply.turn)
    print("NOT KILLED", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
