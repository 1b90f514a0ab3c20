"""Against the real openhands-agent-server from PyPI (see ``agent_server.py``).

One server with a session API key: the key is enforced; a relative working
dir resolves under the server's real home; two uploads read back through
``GET /api/file/download``; a conversation created with a dummy LLM gets the
upload directory as its ``working_dir``; the server's own error messages
reach the user naming the file.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from tandem.adapters.remote import METHODS
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.remote import LlmSettings
from tandem.remote.client import AgentServerClient
from tandem.remote.service import RemoteService

from .agent_server import RunningServer, free_port, serve_for_tests

KEY = "tandem-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serve_for_tests(KEY, "integration")


def test_session_key_is_enforced(server: RunningServer, tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("a")
    for headers in ({}, {"X-Session-API-Key": "wrong"}):
        r = httpx.get(f"{server.url}/api/file/home", headers=headers)
        assert r.status_code == 401
    svc = RemoteService(tmp_path)
    for key in (None, "wrong"):
        with pytest.raises(TandemError) as err:
            asyncio.run(svc.upload(server.url, key, "workspace/x", [f]))
        assert err.value.code == "unauthorized" and "HTTP 401" in err.value.message

    # Straight to upload with a known absolute path: the 401 names the file.
    async def direct() -> None:
        async with AgentServerClient(server.url, "wrong") as c:
            await c.upload(f, f"{server.home}/a.txt")

    with pytest.raises(TandemError) as err:
        asyncio.run(direct())
    assert str(f) in err.value.message and "Unauthorized" in err.value.message
    assert not (server.home / "a.txt").exists()


def test_resolve_upload_download_conversation(server: RunningServer, tmp_path: Path) -> None:
    rel = f"workspace/project/{secrets.token_hex(6)}"
    expected = f"{server.home}/{rel}"
    svc = RemoteService(tmp_path)
    assert asyncio.run(svc.resolve(server.url, KEY, rel)) == expected
    assert asyncio.run(svc.resolve(server.url, KEY, "")) == str(server.home)

    one, two = tmp_path / "one.py", tmp_path / "two.bin"
    one.write_text("print('one')\n")
    two.write_bytes(bytes(range(256)) * 1000)
    wd, done = asyncio.run(svc.upload(server.url, KEY, rel, [one, two]))
    assert wd == expected
    assert [d.path for d in done] == [f"{expected}/one.py", f"{expected}/two.bin"]
    assert [d.size for d in done] == [one.stat().st_size, two.stat().st_size]

    async def read_back() -> list[bytes]:
        async with AgentServerClient(server.url, KEY) as c:
            return [await c.download(d.path) for d in done]

    assert asyncio.run(read_back()) == [one.read_bytes(), two.read_bytes()]
    # Nothing landed under the filesystem root or the server's cwd.
    assert not Path("/workspace/project").joinpath(rel.rsplit("/", 1)[-1]).exists()
    assert not (server.cwd / "workspace" / "project").exists()

    dead = free_port()  # the dummy LLM: never called, since no message is sent
    llm = LlmSettings(
        model="openai/dummy", base_url=f"http://127.0.0.1:{dead}/v1", api_key=SecretStr("x")
    )
    conv = asyncio.run(svc.create_conversation(server.url, KEY, rel, llm))
    assert conv.working_dir == wd
    r = httpx.get(f"{server.url}/api/conversations/{conv.id}", headers={"X-Session-API-Key": KEY})
    assert r.status_code == 200 and r.json()["workspace"]["working_dir"] == wd


def test_server_error_messages_reach_the_user(server: RunningServer, tmp_path: Path) -> None:
    f = tmp_path / "note.txt"
    f.write_text("n")
    svc = RemoteService(tmp_path)
    (server.home / "occupied" / "note.txt").mkdir(parents=True)
    with pytest.raises(TandemError) as err:
        asyncio.run(svc.upload(server.url, KEY, "occupied", [f]))
    assert str(f) in err.value.message and "Path is a directory" in err.value.message
    # A Windows path passes through our resolver; this POSIX server refuses it.
    with pytest.raises(TandemError) as err:
        asyncio.run(svc.upload(server.url, KEY, "C:\\work", [f]))
    assert str(f) in err.value.message and "Path must be absolute" in err.value.message


def test_methods_end_to_end(server: RunningServer, tmp_path: Path) -> None:
    app = App(home=tmp_path / "th")
    specs = {m.name: m for m in METHODS}

    def call(name: str, **params: object) -> Any:
        spec = specs[name]

        async def run() -> Any:
            return await spec.handler(app, spec.params.model_validate(params))

        return asyncio.run(run())

    src = tmp_path / "m.txt"
    src.write_text("via methods")
    t = call(
        "remote/attach",
        session="s-1",
        host="local",
        url=server.url,
        api_key=KEY,
        working_dir="workspace/project/m",
    )
    up = call(
        "remote/upload", url=server.url, api_key=KEY, working_dir=t.working_dir, files=[str(src)]
    )
    assert up.working_dir == t.resolved_working_dir == f"{server.home}/workspace/project/m"
    back = tmp_path / "back.txt"
    call("remote/download", url=server.url, api_key=KEY, path=up.uploaded[0].path, dest=str(back))
    assert back.read_text() == "via methods"
    assert KEY not in (app.home / "remote" / "targets" / "s-1.json").read_text()
