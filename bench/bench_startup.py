"""Start-up: ``tandem ask`` with an instant model; ``tandem serve``'s port line.

* ``ask_wall_instant_fake``: the wall time of ``tandem ask`` (a real process,
  ``python -m tandem.cli``) on a tiny project (three files; its first
  checkpoint taken by a first, untimed run), answered by the fake OpenAI
  server ("ok" at once; ``OPENAI_BASE_URL`` points at it, no key, so no
  re-exec). Anchor: ``python -c "import httpx, pydantic"``, same interpreter,
  alternating with it in the same run; target 1.5 × the anchor. Both with
  their byte code cached (``PYTHONPYCACHEPREFIX``, written by an untimed first
  run; ``PYTHONDONTWRITEBYTECODE`` dropped), as an installed package has it.
* ``ask_cpu_instant_fake``: the same runs in CPU time (user + system of the
  process and the git processes it waited for), beside the anchor's.
  These two are the cold case: no backend of that state root is running.
* ``ask_wall_backend_running`` / ``ask_cpu_backend_running``: the same
  ``tandem ask`` while a ``tandem serve`` of the same state root runs (as
  when Emacs has started one): the turn goes through its private socket
  (`tandem.ask_client`); same anchor and target, alternating in the same run.
* ``ask_floor_without_tandem``: the part of the cold case that is not
  tandem's: a script that imports, in the same order, every module a cold
  ``tandem ask`` imports except tandem's own (read from its
  ``python -X importtime`` log; the standard library's included), then
  streams one chat completion from the same fake server through
  ``httpx.AsyncClient``. Same anchor, alternating; no target (reported):
  the cold ``ask`` cannot cost less than this without dropping one of
  those packages. ``ask_cpu_floor_without_tandem``: the same in CPU time.
* ``serve_port_line``: from spawning ``tandem serve`` (the token written on
  its stdin, as Emacs does) to reading its port line; same anchor, no
  target (reported).
* ``serve_first_hello``: from the same spawn to the reply of ``hello`` sent
  as soon as the port is read (what the user waits for: the port comes
  before the services are built); same anchor, no target (reported).

Medians of RUNS. Run: ``.venv/bin/python bench/bench_startup.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.openai_server import FakeOpenAI  # noqa: E402
from fakes.script import Reply, Script  # noqa: E402

from benchlib import emit  # noqa: E402
from tandem.protocol import sexp  # noqa: E402

CPU: dict[str, list[float]] = {}
"""CPU milliseconds (user + system, the process and what it waited for) per command."""


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _wall_ms(cmd: list[str], env: dict[str, str], cwd: Path, name: str = "") -> float:
    cpu = _children_cpu_ms()
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - t) * 1000
    CPU.setdefault(name, []).append(_children_cpu_ms() - cpu)
    return elapsed


def _hello_reply(port: int) -> object:
    """Send ``hello`` on a new EPC connection to PORT; return its reply message."""
    payload = sexp.dumps([sexp.Symbol("call"), 1, sexp.Symbol("hello"),
                          [{"token": "bench-startup"}]]).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(b"%06x" % len(payload) + payload)
        data = b""
        while len(data) < 6 or len(data) < 6 + int(data[:6], 16):
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise EOFError("the backend closed the connection")
            data += chunk
    return sexp.loads(data[6:6 + int(data[:6], 16)].decode())


def _spawn_serve(env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """``tandem serve``, its token written on its stdin as Emacs does."""
    proc = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve"], env=env, cwd=cwd,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"token": "bench-startup"}) + "\n")
    proc.stdin.flush()
    return proc


def _serve_ms(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(port line, first hello reply) of one ``tandem serve``, in ms from its spawn."""
    t = time.perf_counter()
    proc = _spawn_serve(env, cwd)
    assert proc.stdin is not None and proc.stdout is not None
    line = proc.stdout.readline()
    port_ms = (time.perf_counter() - t) * 1000
    reply = _hello_reply(int(line))  # the port, or the bench is wrong
    hello_ms = (time.perf_counter() - t) * 1000
    assert isinstance(reply, list) and str(reply[0]) == "return", reply
    proc.stdin.close()  # Emacs went away: the server stops
    proc.wait(30)
    return port_ms, hello_ms


def _floor_script(ask: list[str], env: dict[str, str], url: str, path: Path) -> int:
    """Write to PATH the floor of the cold ASK (see ``ask_floor_without_tandem``).

    Return how many modules it imports."""
    log = subprocess.run([ask[0], "-X", "importtime", *ask[1:]], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True).stderr
    modules: list[str] = []
    for line in log.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            name = line.rsplit("|", 1)[1].strip()
            # A module is logged after what it imports: this order is the process's.
            if name.split(".")[0] != "tandem" and name not in modules:
                modules.append(name)
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "hello"}]}
    path.write_text(
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError:  # another platform's module, tried and refused there too\n"
        "        pass\n"
        "import asyncio, httpx, ssl\n"
        "async def turn():\n"
        "    # As tandem's client of an http:// server: no CA bundle loaded.\n"
        "    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)\n"
        "    async with httpx.AsyncClient(verify=tls) as client:\n"
        f"        async with client.stream('POST', {url!r}, json={body!r}) as reply:\n"
        "            reply.raise_for_status()\n"
        "            async for _ in reply.aiter_lines():\n"
        "                pass\n"
        "asyncio.run(turn())\n")
    return len(modules)


def _running_backend(env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """A ``tandem serve`` whose ``tandem ask`` socket is up (its token file written)."""
    proc = _spawn_serve(env, cwd)
    assert proc.stdin is not None and proc.stdout is not None
    _hello_reply(int(proc.stdout.readline()))
    folder = Path(env["XDG_RUNTIME_DIR"]) / "tandem"
    deadline = time.monotonic() + 60
    while not list(folder.glob("ask-*.token")):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("the backend opened no tandem ask socket")
        time.sleep(0.02)
    return proc


def main() -> None:
    """Print the start-up figures as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tandem-bench-start-") as tmp, \
            FakeOpenAI(Script(default=Reply(text="ok"))) as fake:
        base = Path(tmp)
        project = base / "proj"
        project.mkdir()
        for name in ("a.py", "b.py", "README.md"):
            (project / name).write_text(f"# {name}\n")
        env = {k: v for k, v in os.environ.items()
               if not k.endswith("_API_KEY") and k != "PYTHONDONTWRITEBYTECODE"}
        # Byte code cached for both commands alike (an installed package has it;
        # without it tandem's modules were compiled from source at every start).
        env.update(TANDEM_HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "config"),
                   OPENAI_BASE_URL=fake.base_url + "/v1", PYTHONPATH=str(ROOT / "python"),
                   PYTHONPYCACHEPREFIX=str(base / "pycache"),
                   XDG_RUNTIME_DIR=str(base / "run"))
        (base / "run").mkdir(mode=0o700)
        ask = [sys.executable, "-m", "tandem.cli", "ask", "hello", "--provider",
               "openai:bench", "--cwd", str(project)]
        anchor_cmd = [sys.executable, "-c", "import httpx, pydantic"]
        _wall_ms(ask, env, ROOT)  # the store, its first checkpoint and the byte code exist now
        _wall_ms(anchor_cmd, env, ROOT)
        _serve_ms(env, ROOT)
        floor = base / "floor.py"
        modules = _floor_script(ask, env, fake.base_url + "/v1/chat/completions", floor)
        floor_cmd = [sys.executable, str(floor)]
        _wall_ms(floor_cmd, env, ROOT)
        asks, anchors, ports, hellos, warm, floors = [], [], [], [], [], []
        for _ in range(args.runs):
            anchors.append(_wall_ms(anchor_cmd, env, ROOT, "anchor"))
            asks.append(_wall_ms(ask, env, ROOT, "ask"))
            floors.append(_wall_ms(floor_cmd, env, ROOT, "floor"))
            port_ms, hello_ms = _serve_ms(env, ROOT)
            ports.append(port_ms)
            hellos.append(hello_ms)
        backend = _running_backend(env, ROOT)
        try:
            _wall_ms(ask, env, ROOT)  # the backend's first turn builds its turn service
            for _ in range(args.runs):
                anchors.append(_wall_ms(anchor_cmd, env, ROOT, "anchor"))
                warm.append(_wall_ms(ask, env, ROOT, "warm"))
        finally:
            assert backend.stdin is not None
            backend.stdin.close()
            backend.wait(30)
        anchor = statistics.median(anchors)
        emit("ask_wall_instant_fake", statistics.median(asks),
             'python -c "import httpx, pydantic"', anchor, round(1.5 * anchor, 1), digits=1)
        # The same in CPU time: on a loaded machine the wall is mostly waiting.
        emit("ask_cpu_instant_fake", statistics.median(CPU["ask"]),
             'python -c "import httpx, pydantic" (CPU)', statistics.median(CPU["anchor"]),
             None, digits=1)
        emit("ask_floor_without_tandem", statistics.median(floors),
             'python -c "import httpx, pydantic"', anchor, None, digits=1)
        emit("ask_cpu_floor_without_tandem", statistics.median(CPU["floor"]),
             'python -c "import httpx, pydantic" (CPU)', statistics.median(CPU["anchor"]),
             None, digits=1)
        emit("ask_wall_backend_running", statistics.median(warm),
             'python -c "import httpx, pydantic"', anchor, round(1.5 * anchor, 1), digits=1)
        emit("ask_cpu_backend_running", statistics.median(CPU["warm"]),
             'python -c "import httpx, pydantic" (CPU)', statistics.median(CPU["anchor"]),
             None, digits=1)
        emit("serve_port_line", statistics.median(ports),
             'python -c "import httpx, pydantic"', anchor, None, digits=1)
        emit("serve_first_hello", statistics.median(hellos),
             'python -c "import httpx, pydantic"', anchor, None, digits=1)
        print(f"load average {os.getloadavg()}; the floor imports {modules} modules",
              file=sys.stderr)


if __name__ == "__main__":
    main()
