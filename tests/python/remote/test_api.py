"""The remote methods as the server calls them: params model, then handler."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from tandem.adapters.remote import METHODS
from tandem.app import App
from tandem.protocol.base import TandemError

from .fake_server import FakeAgentServer

SPECS = {m.name: m for m in METHODS}


def call(app: App, name: str, **params: Any) -> Any:
    spec = SPECS[name]

    async def run() -> Any:
        return await spec.handler(app, spec.params.model_validate(params))

    reply = asyncio.run(run())
    if isinstance(reply, BaseModel):
        return reply.model_dump()
    if isinstance(reply, list):
        return [r.model_dump() if isinstance(r, BaseModel) else r for r in reply]
    return reply


@pytest.fixture
def app(tmp_path: Path) -> App:
    return App(home=tmp_path / "tandem-home")


def test_method_names() -> None:
    assert set(SPECS) == {
        "remote/resolve",
        "remote/upload",
        "remote/download",
        "remote/conversation-new",
        "remote/hosts",
        "remote/attach",
        "remote/target",
        "remote/detach",
    }
    assert all(m.doc for m in METHODS)


def test_resolve_upload_download(app: App, keyed: FakeAgentServer, tmp_path: Path) -> None:
    k = {"url": keyed.url, "api_key": "s3cret-key"}
    wd = call(app, "remote/resolve", working_dir="workspace/project/abc", **k)["working_dir"]
    assert wd == f"{keyed.home}/workspace/project/abc"
    a, b = tmp_path / "a.py", tmp_path / "b.txt"
    a.write_text("print(1)\n")
    b.write_text("bee\n")
    up = call(
        app, "remote/upload", working_dir="workspace/project/abc", files=[str(a), str(b)], **k
    )
    assert up["working_dir"] == wd
    assert [u["path"] for u in up["uploaded"]] == [f"{wd}/a.py", f"{wd}/b.txt"]
    dest = tmp_path / "back.py"
    got = call(app, "remote/download", path=f"{wd}/a.py", dest=str(dest), **k)
    assert got["size"] == 9 and dest.read_text() == "print(1)\n"
    assert keyed.home_requests == 1  # one lookup for the whole app


def test_upload_reports_each_failed_file(app: App, fake: FakeAgentServer, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "sub.txt"
    good.write_text("g")
    bad.write_text("b")
    (Path(fake.home) / "w" / "sub.txt").mkdir(parents=True)
    with pytest.raises(TandemError) as err:
        call(app, "remote/upload", url=fake.url, working_dir="w", files=[str(good), str(bad)])
    assert str(bad) in err.value.message and "Path is a directory" in err.value.message
    assert str(good) not in err.value.message
    assert err.value.data["failed"] == [str(bad)]
    assert [u["file"] for u in err.value.data["uploaded"]] == [str(good)]


def test_upload_refuses_colliding_basenames(
    app: App, fake: FakeAgentServer, tmp_path: Path
) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "a.txt").write_text("1")
    (tmp_path / "x" / "a.txt").write_text("2")
    with pytest.raises(TandemError, match="both upload as"):
        call(
            app,
            "remote/upload",
            url=fake.url,
            files=[str(tmp_path / "a.txt"), str(tmp_path / "x" / "a.txt")],
        )
    assert fake.home_requests == 0


def test_params_are_validated(app: App, fake: FakeAgentServer) -> None:
    with pytest.raises(ValidationError):
        SPECS["remote/upload"].params.model_validate({"url": fake.url, "files": []})
    with pytest.raises(ValidationError):
        SPECS["remote/resolve"].params.model_validate({"url": fake.url, "bogus": 1})
    with pytest.raises(ValidationError):
        SPECS["remote/conversation-new"].params.model_validate(
            {"url": fake.url, "llm": {"model": "m", "base_url": "file:///x"}}
        )
    with pytest.raises(TandemError):
        call(app, "remote/resolve", url=fake.url, working_dir="../escape")
    with pytest.raises(TandemError, match="absolute"):
        call(app, "remote/upload", url=fake.url, files=["relative.txt"])
    with pytest.raises(TandemError, match="absolute"):
        call(app, "remote/download", url=fake.url, path="/x", dest="rel/out.txt")
    assert fake.home_requests == 0


def test_conversation_new(app: App, fake: FakeAgentServer) -> None:
    conv = call(
        app,
        "remote/conversation-new",
        url=fake.url,
        working_dir="",
        llm={"model": "openai/dummy", "base_url": "http://127.0.0.1:9/v1"},
    )
    assert conv["working_dir"] == fake.home and conv["id"]


def test_hosts_probe(app: App, keyed: FakeAgentServer, fake: FakeAgentServer) -> None:
    rows = call(
        app,
        "remote/hosts",
        hosts=[
            {"name": "ok", "url": keyed.url, "api_key": "s3cret-key"},
            {"name": "nokey", "url": keyed.url + "/"},
            {"name": "bad", "url": "ftp://x"},
        ],
    )
    assert rows[0] == {"name": "ok", "url": keyed.url, "home": keyed.home, "error": None}
    # Cached per host and key: a keyless probe never borrows the keyed lookup.
    assert rows[1]["home"] is None and "Unauthorized" in rows[1]["error"]
    assert rows[2]["home"] is None and "http" in rows[2]["error"]


def test_attach_target_detach_store_no_key(app: App, keyed: FakeAgentServer) -> None:
    t = call(
        app,
        "remote/attach",
        session="01J-sess",
        host="box",
        url=keyed.url + "/",
        api_key="s3cret-key",
        working_dir="workspace/project/p1",
    )
    assert t["resolved_working_dir"] == f"{keyed.home}/workspace/project/p1"
    assert t["url"] == keyed.url
    assert call(app, "remote/target", session="01J-sess") == t
    stored = list((app.home / "remote" / "targets").iterdir())
    assert [p.name for p in stored] == ["01J-sess.json"]
    assert "s3cret-key" not in stored[0].read_text()
    assert call(app, "remote/detach", session="01J-sess") is True
    assert call(app, "remote/target", session="01J-sess") is None
    assert call(app, "remote/detach", session="01J-sess") is False
    with pytest.raises(TandemError):
        call(app, "remote/target", session="../etc")


def test_damaged_target_is_reported(app: App) -> None:
    d = app.home / "remote" / "targets"
    d.mkdir(parents=True)
    (d / "s1.json").write_text('{"session": "s1", "host"')
    with pytest.raises(TandemError) as err:
        call(app, "remote/target", session="s1")
    assert err.value.code == "corrupt" and "s1.json" in err.value.message
