"""The agent-server client against a real socket: uploads, errors, the key."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from pathlib import Path

import pytest
from pydantic import SecretStr

from tandem.protocol.base import TandemError
from tandem.protocol.remote import LlmSettings
from tandem.remote.client import AgentServerClient, normalize_base_url
from tandem.remote.service import RemoteService

from .fake_server import FakeAgentServer

KEY = "s3cret-key"


def _file(tmp_path: Path, name: str, data: bytes) -> Path:
    f = tmp_path / name
    f.write_bytes(data)
    return f


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("https://example.org/agent/", "https://example.org/agent"),
        ("  http://h:1  ", "http://h:1"),
    ],
)
def test_base_url_normalized(url: str, base: str) -> None:
    assert normalize_base_url(url) == base


@pytest.mark.parametrize(
    "url", ["", "ftp://h", "h:8000", "http://user:pw@h", "http://h/?k=v", "http://h/#x", "nope"]
)
def test_bad_base_urls_refused(url: str) -> None:
    with pytest.raises(TandemError):
        normalize_base_url(url)


def test_upload_and_download_round_trip(fake: FakeAgentServer, tmp_path: Path) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB: several multipart chunks
    src = _file(tmp_path, "big.bin", big)
    seen: list[tuple[int, int]] = []

    async def run() -> bytes:
        async with AgentServerClient(fake.url) as c:
            dest = f"{fake.home}/workspace/project/x/big.bin"
            result = await c.upload(src, dest, lambda done, total: seen.append((done, total)))
            assert result.size == len(big) and result.path == dest
            return await c.download(dest)

    assert asyncio.run(run()) == big
    assert seen[-1] == (len(big), len(big)) and len(seen) > 1
    assert (Path(fake.home) / "workspace/project/x/big.bin").read_bytes() == big


def test_upload_to_a_directory_names_file_and_server_message(
    fake: FakeAgentServer, tmp_path: Path
) -> None:
    src = _file(tmp_path, "a.txt", b"a")
    (Path(fake.home) / "taken").mkdir()

    async def run() -> None:
        async with AgentServerClient(fake.url) as c:
            await c.upload(src, f"{fake.home}/taken")

    with pytest.raises(TandemError) as err:
        asyncio.run(run())
    assert str(src) in err.value.message
    assert "Path is a directory" in err.value.message
    assert err.value.code == "remote-refused"


def test_windows_path_on_posix_server_reports_server_message(
    fake: FakeAgentServer, tmp_path: Path
) -> None:
    # C:\w passes through as absolute on our side; a POSIX server disagrees
    # and says so, and the user sees its words.
    src = _file(tmp_path, "a.txt", b"a")
    svc = RemoteService(tmp_path)
    with pytest.raises(TandemError) as err:
        asyncio.run(svc.upload(fake.url, None, "C:\\w", [src]))
    assert "Path must be absolute" in err.value.message and str(src) in err.value.message
    assert fake.home_requests == 0  # absolute working dirs need no home lookup


def test_missing_local_file_is_named(fake: FakeAgentServer, tmp_path: Path) -> None:
    async def run() -> None:
        async with AgentServerClient(fake.url) as c:
            await c.upload(tmp_path / "nope.txt", f"{fake.home}/nope.txt")

    with pytest.raises(TandemError) as err:
        asyncio.run(run())
    assert "nope.txt" in err.value.message and err.value.code == "invalid"
    assert "no such local file" in err.value.message
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    async def run_fifo() -> None:
        async with AgentServerClient(fake.url) as c:
            await c.upload(fifo, f"{fake.home}/fifo")

    with pytest.raises(TandemError, match="not a regular file"):
        asyncio.run(run_fifo())


def test_key_is_sent_and_enforced(keyed: FakeAgentServer, tmp_path: Path) -> None:
    src = _file(tmp_path, "a.txt", b"a")
    svc = RemoteService(tmp_path)
    for key in (None, "wrong-key"):
        with pytest.raises(TandemError) as err:
            asyncio.run(svc.upload(keyed.url, key, "w", [src]))
        assert err.value.code == "unauthorized"
        assert "HTTP 401" in err.value.message and "API key" in err.value.message
    wd, done = asyncio.run(svc.upload(keyed.url, KEY, "w", [src]))
    assert wd == f"{keyed.home}/w" and done[0].path == f"{keyed.home}/w/a.txt"
    assert keyed.seen_keys[-1] == KEY


def test_401_on_upload_names_the_file(keyed: FakeAgentServer, tmp_path: Path) -> None:
    src = _file(tmp_path, "a.txt", b"a")

    async def run() -> None:
        async with AgentServerClient(keyed.url, "wrong") as c:
            await c.upload(src, f"{keyed.home}/a.txt")

    with pytest.raises(TandemError) as err:
        asyncio.run(run())
    assert str(src) in err.value.message and "Unauthorized" in err.value.message


def test_key_never_in_repr_errors_or_logs(
    keyed: FakeAgentServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    c = AgentServerClient(keyed.url, "wrong-secret-value")
    assert "wrong-secret-value" not in repr(c)
    with pytest.raises(TandemError) as err:
        asyncio.run(c.home())
    asyncio.run(c.aclose())
    assert "wrong-secret-value" not in str(err.value) and "wrong-secret-value" not in repr(
        err.value.data
    )
    assert "wrong-secret-value" not in caplog.text


def test_bad_keys_refused() -> None:
    for key in ("", "a\nb"):
        with pytest.raises(TandemError):
            AgentServerClient("http://127.0.0.1:1", key)


def test_unreachable_server(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    svc = RemoteService(tmp_path)
    with pytest.raises(TandemError) as err:
        asyncio.run(svc.resolve(f"http://127.0.0.1:{port}", None, "w"))
    assert err.value.code == "remote-unreachable" and str(port) in err.value.message


def test_conversation_uses_resolved_working_dir(fake: FakeAgentServer, tmp_path: Path) -> None:
    svc = RemoteService(tmp_path)
    llm = LlmSettings(
        model="openai/dummy", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("llm-key")
    )
    conv = asyncio.run(svc.create_conversation(fake.url, None, "workspace/project/ab", llm))
    wd, _ = asyncio.run(
        svc.upload(fake.url, None, "workspace/project/ab", [_file(tmp_path, "f", b"")])
    )
    assert conv.working_dir == wd == f"{fake.home}/workspace/project/ab"
    sent = fake.conversations[0]
    assert sent["workspace"] == {"working_dir": wd}
    assert sent["agent_settings"]["llm"] == {
        "usage_id": "tandem",
        "model": "openai/dummy",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "llm-key",
        "stream": True,
    }
    assert fake.home_requests == 1
    assert "llm-key" not in repr(llm)


def test_conversation_refuses_relative_dir_at_client(fake: FakeAgentServer) -> None:
    async def run() -> None:
        async with AgentServerClient(fake.url) as c:
            await c.create_conversation("workspace/project", LlmSettings(model="m"))

    with pytest.raises(TandemError, match="resolve the working dir first"):
        asyncio.run(run())
    assert fake.conversations == []


def test_download_to_is_atomic_and_reports_server_errors(
    fake: FakeAgentServer, tmp_path: Path
) -> None:
    (Path(fake.home) / "r.txt").write_text("remote")
    dest = tmp_path / "out" / "r.txt"
    dest.parent.mkdir()

    async def run(path: str) -> int:
        async with AgentServerClient(fake.url) as c:
            return await c.download_to(path, dest)

    assert asyncio.run(run(f"{fake.home}/r.txt")) == 6
    assert dest.read_text() == "remote"
    with pytest.raises(TandemError, match="File not found"):
        asyncio.run(run(f"{fake.home}/missing.txt"))
    assert dest.read_text() == "remote"  # untouched by the failure
    assert [p.name for p in dest.parent.iterdir()] == ["r.txt"]  # no temp left behind
