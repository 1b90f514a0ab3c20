"""Run one native tool call in a child process and print what came back as JSON.

The hostile-input tests run the tool here, not in pytest's process: a
tool that blocks (a FIFO) or grows without bound (``/dev/zero``) on a broken
implementation then costs a timeout and a bounded address space, not the
test run. ``VmHWM`` (peak resident memory) is read before and after the call.

Usage: ``python tool_child.py ROOT TOOL ARGS_JSON [TOOL_TIMEOUT]``.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
from pathlib import Path
from typing import Any


def vm_hwm_kb() -> int:
    """Peak resident set size of this process so far, in KiB (from /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


async def _run(root: Path, name: str, raw: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    from tandem.tools.base import ToolContext, ToolError
    from tandem.tools.executor import default_tools

    tool = next(t for t in default_tools() if t.name == name)
    ctx = ToolContext(root=root, output_cap=1 << 20)
    if timeout is not None:
        ctx.tool_timeout = timeout
    before = vm_hwm_kb()
    try:
        out = await tool.run(ctx, tool.args.model_validate(raw))
        status = "completed"
    except ToolError as exc:
        out, status = str(exc), "failed"
    return {"status": status, "output": out, "hwm_before": before, "hwm_after": vm_hwm_kb()}


def main() -> None:
    """Entry point: see the module docstring."""
    limit = 1536 << 20  # a runaway read hits MemoryError instead of the machine
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    root, name, raw = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else None
    # Import everything before the baseline, so VmHWM growth is the call's own.
    import tandem.tools.executor  # noqa: F401

    print(json.dumps(asyncio.run(_run(root, name, raw, timeout))))


if __name__ == "__main__":
    main()
