"""The directive methods: records, previews, edits, anchors and every refusal a user can cause."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from ws_helpers import create

from tandem.adapters import directives as handlers
from tandem.app import App
from tandem.protocol import directives as dp
from tandem.protocol.base import TandemError
from wire_replies import Plain

api = Plain(handlers)  # replies as the wire's JSON, read by key

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(tmp_path: Path) -> App:
    return App(home=tmp_path / "home")


async def test_create_list_get_edit_archive(app: App, project: Path) -> None:
    rec = await create(app, project, "  Make greet loud  ", path=str(project / "src/app.py"),
                       start=1, end=2, text="def greet():\n    return 'hi'\n",
                       references=[{"path": "notes.md"}])
    assert rec["id"] == "D1" and rec["request"] == "Make greet loud"
    assert rec["anchor"]["path"] == "src/app.py" and rec["references"][0]["path"] == "notes.md"
    assert rec["root"] == str(project.resolve()) and rec["workspace"]
    await create(app, project, "Second")
    rows = await api.list_directives(app, dp.ListParams(root=str(project)))
    assert [r["id"] for r in rows] == ["D1", "D2"] and rows[0]["path"] == "src/app.py"
    edited = await api.edit(app, dp.EditParams(root=str(project), id="D1",
                                                request="Make greet very loud"))
    assert edited["request_changed"] and len(edited["request_history"]) == 2
    arch = await api.archive(app, dp.ArchiveParams(root=str(project), id="D2"))
    assert arch["archived"] and arch["actions"] == []
    rows = await api.list_directives(app, dp.ListParams(root=str(project)))
    assert [r["id"] for r in rows] == ["D1"]
    rows = await api.list_directives(app, dp.ListParams(root=str(project), archived=True))
    assert [r["id"] for r in rows] == ["D1", "D2"]
    back = await api.archive(app, dp.ArchiveParams(root=str(project), id="D2", archived=False))
    assert not back["archived"] and back["actions"]
    info = await api.workspace_info(app, dp.RootParams(root=str(project)))
    assert info["id"] == rec["workspace"] and Path(info["log"]).is_file()


async def test_preview_is_the_exact_prompt_and_sends_nothing(app: App, project: Path) -> None:
    await create(app, project, "Make it loud", references=[{"path": "notes.md",
                                                            "start_line": 2}])
    p = await api.preview(app, dp.ActionParams(root=str(project), id="D1", action="discuss",
                                                text="Why?"))
    assert p["prompt"].startswith("# Directive D1\n") and "Shout politely." in p["prompt"]
    assert "notes.md, line 2" in p["prompt"] and p["read_only"]
    assert p["system"]["name"] == "discuss"
    custom = await api.preview(app, dp.ActionParams(
        root=str(project), id="D1", action="implement",
        system_directive={"name": "terse", "system": "Be terse.", "template": ["u", "a"]}))
    assert custom["system"] == {"name": "terse", "system": "Be terse.", "template": ["u", "a"]}
    with pytest.raises(TandemError, match="alternate"):
        await api.preview(app, dp.ActionParams(root=str(project), id="D1", action="implement",
                                                system_directive={"template": ["only user"]}))
    log = (await api.workspace_info(app, dp.RootParams(root=str(project))))["log"]
    assert "attempt" not in Path(log).read_text() and not (app.home / "sessions").exists()


async def test_anchor_detach_missing_and_reattach(app: App, project: Path) -> None:
    await create(app, project, "Loud", path="src/app.py", start=1, end=2,
                 text="def greet():\n    return 'hi'\n")
    root = str(project)
    det = await api.anchor(app, dp.AnchorParams(root=root, id="D1", path="src/app.py",
                                                 start_line=1, end_line=2,
                                                 text="def greet():\n    return 'hi'\n",
                                                 status="detached"))
    assert det["anchor"]["status"] == "detached"
    (project / "src/app.py").rename(project / "src/gone.py")
    with pytest.raises(TandemError, match="still missing"):
        await api.reattach(app, dp.ReattachParams(root=root, id="D1"))
    (project / "src/gone.py").write_text("# moved\ndef greet():\n    return 'hi'\n")
    (project / "src/gone.py").rename(project / "src/app.py")
    back = await api.reattach(app, dp.ReattachParams(root=root, id="D1"))
    assert back["anchor"]["status"] == "attached"
    assert (back["anchor"]["start_line"], back["anchor"]["end_line"]) == (2, 3)
    (project / "src/app.py").write_text("def greet():\n    return 'hi'\n" * 2)
    with pytest.raises(TandemError) as amb:
        await api.reattach(app, dp.ReattachParams(root=root, id="D1"))
    assert amb.value.code == "ambiguous" and "2 times" in amb.value.message
    chosen = await api.reattach(app, dp.ReattachParams(root=root, id="D1", start_line=3,
                                                        end_line=4))
    assert chosen["anchor"]["start_line"] == 3
    with pytest.raises(TandemError, match="not in src/app.py"):
        await api.reattach(app, dp.ReattachParams(root=root, id="D1", start_line=9))


async def test_user_errors_are_clear(app: App, project: Path, tmp_path: Path) -> None:
    root = str(project)
    with pytest.raises(TandemError, match="absolute directory"):
        await create(app, Path("relative"), "x")
    with pytest.raises(TandemError, match="not a directory"):
        await create(app, tmp_path / "missing", "x")
    with pytest.raises(TandemError, match="empty"):
        await create(app, project, "   ")
    with pytest.raises(TandemError, match="outside the workspace"):
        await create(app, project, "x", path=str(tmp_path / "elsewhere.txt"))
    with pytest.raises(TandemError, match="before start_line"):
        await create(app, project, "x", start=5, end=2)
    with pytest.raises(TandemError, match="too long"):
        await create(app, project, "x" * 20_001)
    with pytest.raises(TandemError) as none:
        await api.get(app, dp.GetParams(root=root, id="D1"))
    assert none.value.code == "not-found"
    await create(app, project, "x")
    for bad_id in ("D0", "X1", "D1/../"):
        with pytest.raises(TandemError, match="Not a directive id"):
            await api.get(app, dp.GetParams(root=root, id=bad_id))
    with pytest.raises(TandemError, match="No directive D7"):
        await api.get(app, dp.GetParams(root=root, id="D7"))
    with pytest.raises(TandemError, match="Nothing to change"):
        await api.edit(app, dp.EditParams(root=root, id="D1", request="x"))
    with pytest.raises(ValidationError):
        dp.ActParams(root=root, id="D1", action="explode")
    with pytest.raises(ValidationError):
        dp.CreateParams(root=root, path="a.txt", start_line=0, end_line=1, request="x")
    with pytest.raises(ValidationError):
        dp.GetParams(root=root, id="D1", surprise=True)  # type: ignore[call-arg]
    with pytest.raises(TandemError) as unavailable:
        await api.preview(app, dp.ActionParams(root=root, id="D1", action="retry"))
    assert unavailable.value.code == "unavailable"
    with pytest.raises(TandemError, match="no surviving attempt"):
        await api.attempt_diff(app, dp.DiffParams(root=root, id="D1", attempt=1))
    assert await api.list_directives(app, dp.ListParams(root=str(tmp_path))) == []
