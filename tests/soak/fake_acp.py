"""The soak's ACP agent: the scripted agent of the ACP tests, its actions read off the prompt.

A real process speaking ACP over stdio (``tests/python/acp/fake_agent.py``),
started by the backend as any configured agent is. As with the fake model,
the reply depends only on the request's plan (``[soak 17 write t3.txt
v17]``): ``write`` writes the file through the client's file system (so
tandem checkpoints it), ``slow`` streams for a few seconds (long enough for
the soak to ``kill -9`` this process mid-turn), anything else says a line.

Usage: ``python fake_acp.py LOG.jsonl``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

_AGENT = Path(__file__).resolve().parents[1] / "python" / "acp" / "fake_agent.py"
_spec = importlib.util.spec_from_file_location("soak_fake_agent", _AGENT)
assert _spec is not None and _spec.loader is not None
fake_agent = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_agent)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan import PLAN  # noqa: E402


def actions(text: str, cwd: str) -> list[dict[str, Any]]:
    """The actions of a prompt TEXT in a session at CWD (see the module's docstring)."""
    found = PLAN.findall(text)
    if not found:
        return [{"say": "Summary: the soak agent did some work."}]
    op, action, a, b = found[-1]
    if action == "write":
        write = {"fs_write": [str(Path(cwd) / a), b + "\n"]}
        return [{"say": f"writing {a}"}, write, {"say": "done"}]
    if action == "slow":
        return [{"say": f"slow {op} "}, {"sleep": 5}, {"say": "late"}]
    return [{"say": f"answer {op}"}]


class SoakAgent(fake_agent.FakeAgent):  # type: ignore[misc,name-defined]
    """The scripted agent whose every prompt is planned by `actions`."""

    cwds: dict[str, str] = {}

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        """A new session at CWD (remembered: file paths are absolute in ACP)."""
        reply = await super().new_session(cwd, **kwargs)
        self.cwds[reply.session_id] = cwd
        return reply

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> Any:
        """Answer PROMPT with the actions its plan names."""
        text = "".join(getattr(block, "text", "") for block in prompt)
        self.script["prompts"] = [actions(text, self.cwds.get(session_id, "."))]
        self.prompt_index = 0
        return await super().prompt(prompt, session_id, **kwargs)


async def main(log_path: str) -> None:
    """Serve ACP on stdio until the client goes."""
    agent = SoakAgent({"capabilities": {"close": True}}, Path(log_path))
    await fake_agent.run_agent(agent, use_unstable_protocol=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
