"""Checkpoints and Rewind of a remote workspace, against the real agent-server 1.58.2.

The turns run through the real engine; their "agent" is a stand-in that
changes the server's files through the server's own bash endpoint and
posts its message into a real conversation there (the remote engine is
tested on its own). What the server holds is always read back
through the server (download, bash, conversation info), never the mirror.
"""

from __future__ import annotations

import hashlib
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from tandem.adapters.review import before
from tandem.adapters.sessions import new, turn_patch
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.remote import LlmSettings
from tandem.protocol.review import BeforeParams
from tandem.protocol.sessions import NewParams, TurnPatchParams
from tandem.providers.base import RemoteTurnStart, TurnRequest, TurnResult, TurnSink
from tandem.remote.client import AgentServerClient
from tandem.store.journal import Journal
from tandem.turns.engine import TurnEnded, TurnSpec

from .agent_server import RunningServer, serve_for_tests

pytestmark = pytest.mark.anyio
KEY = "tandem-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serve_for_tests(KEY, "mirror tests")


class ServerShellAgent:
    """Stands in for the remote engine: each turn runs one shell script on the server.

    It posts the request into the conversation (``run: false``: no LLM) and
    reports, as the remote engine must (``TurnResult.remote_turn``), the last
    server event before it.
    """

    name = "openai:stand-in"
    conversation = None
    conversation_id = None

    def __init__(self, client: AgentServerClient, http: httpx.AsyncClient, wd: str,
                 conversation: str, scripts: list[str]) -> None:
        self.client, self.http, self.wd = client, http, wd
        self.conv = conversation
        self.scripts = scripts
        self.untouched: list[bool] = []
        """What each next turn reports as `TurnResult.workspace_untouched` (default no)."""

    def reset_conversation(self, conversation_id: str | None = None) -> None:
        """Nothing kept here."""

    async def close(self) -> None:
        """Nothing to release."""

    async def run(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        """Post the message, run the next script; the engine records the rest."""
        before = await last_event(self.http, self.conv)
        r = await self.http.post(f"/api/conversations/{self.conv}/events", json={
            "role": "user", "content": [{"type": "text", "text": request.messages[-1].text}],
            "run": False})
        assert r.status_code < 300, r.text
        code, out = await self.client.execute_bash(self.scripts.pop(0), self.wd)
        assert code == 0, out
        untouched = self.untouched.pop(0) if self.untouched else False
        return TurnResult(outcome="succeeded", workspace_untouched=untouched,
                          remote_turn=RemoteTurnStart(conversation_id=self.conv,
                                                      after_event_id=before))


async def last_event(http: httpx.AsyncClient, conversation: str) -> str | None:
    """The id of the conversation's newest event (None: it has none)."""
    r = await http.get(f"/api/conversations/{conversation}/events/search",
                       params={"sort_order": "TIMESTAMP_DESC", "limit": 1})
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    return str(items[0]["id"]) if items else None


async def on_server(client: AgentServerClient, wd: str) -> dict[str, str]:
    """Every file under WD on the server with its bytes (and 'x' when executable)."""
    # The server made WD a git repository when the conversation started; its
    # .git is not mirrored (see EXCLUDES) and the agent here never touches it.
    code, out = await client.execute_bash(
        "find . -path ./.git -prune -o \\( -type f -o -type l \\) -print | sort", wd)
    assert code == 0, out
    files: dict[str, str] = {}
    for line in out.split():
        rel = line.removeprefix("./")
        data = (await client.download(f"{wd}/{rel}")).decode()
        x, _ = await client.execute_bash(f"test -x {rel}", wd)
        files[rel] = data + (" [x]" if x == 0 else "")
    return files


SEED = ("mkdir -p sub out && printf 'alpha\\n' > a.txt && printf 'kept\\n' > keep.txt && "
        "printf '#!/bin/sh\\n' > sub/run.sh && chmod +x sub/run.sh && "
        "printf 'inside\\n' > out/f.txt")
TURN1 = ("printf 'alpha one\\n' > a.txt && printf 'bee\\n' > b.txt && rm keep.txt && "
         "chmod -x sub/run.sh")
TURN2 = "printf 'bee two\\n' > b.txt && mkdir -p c && printf 'deep\\n' > c/deep.txt"


async def setup(server: RunningServer, tmp_path: Path, scripts: list[str]
                ) -> tuple[App, str, str, str, AgentServerClient, httpx.AsyncClient]:
    app = App(home=tmp_path / "home", events=RecordingSink())
    project = tmp_path / "project"
    project.mkdir()
    sid = (await new(app, NewParams(cwd=str(project)))).id
    target = await app.remote.attach(sid, "box", server.url, KEY,
                                     f"workspace/mirror-{secrets.token_hex(4)}")
    wd = target.resolved_working_dir
    client = AgentServerClient(server.url, KEY)
    code, out = await client.execute_bash(f"mkdir -p {wd}", "/")
    assert code == 0, out
    code, out = await client.execute_bash(SEED, wd)
    assert code == 0, out
    conv = await client.create_conversation(wd, LlmSettings(
        model="openai/none", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("sk-unused")))
    http = httpx.AsyncClient(base_url=server.url, headers={"X-Session-API-Key": KEY})
    agent = ServerShellAgent(client, http, wd, conv.id, scripts)

    def provider_for(spec: TurnSpec, journal: Journal) -> Any:
        return agent

    app.turns.engine.provider_for = provider_for
    return app, sid, wd, conv.id, client, http


async def turn(app: App, sid: str, text: str) -> TurnEnded:
    engine = app.turns.engine
    n = await engine.accept(TurnSpec(session=sid, text=text, provider="openai:stand-in",
                                     permission_mode="auto-edit"))
    return await engine.wait(sid, n)


async def test_turn_patches_and_rewind_put_the_server_back(
        server: RunningServer, tmp_path: Path) -> None:
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [TURN1, TURN2])
    try:
        seeded = await on_server(client, wd)
        first_leaf = await last_event(http, conv)
        one = await turn(app, sid, "FIRST")
        assert one.outcome == "succeeded", one.error
        patch = one.patch
        assert patch is not None and patch.remote is not None
        assert sorted((f.path, f.status) for f in patch.files) == [
            ("a.txt", "modified"), ("b.txt", "created"), ("keep.txt", "deleted"),
            ("sub/run.sh", "modified")]
        assert patch.remote.host == "box" and patch.remote.working_dir == wd
        assert {g.reason for g in patch.remote.gaps} >= {"excluded", "not-archived"}
        assert one.completeness == "captured"
        assert list((tmp_path / "project").iterdir()) == []  # the local project: untouched
        mirror = app.remote_checkpoints.mirror(sid)
        assert str(mirror.root).startswith(str(app.home))
        after_one = await on_server(client, wd)
        second_leaf = await last_event(http, conv)  # the first turn's message
        assert second_leaf is not None and first_leaf is None
        two = await turn(app, sid, "SECOND")
        assert two.files_changed == ["b.txt", "c/deep.txt"]

        # Rewind before the second turn: its files go, the conversation's HEAD goes back
        # to the first turn's message.
        back = await app.rewinds.rewind(sid, 2, (await app.rewinds.plan(sid, 2)).digest)
        assert back.remote is not None and back.remote.failed == [], back.remote
        assert await on_server(client, wd) == after_one
        assert back.remote.event_id == second_leaf
        info = (await http.get(f"/api/conversations/{conv}")).json()
        assert info["leaf_event_id"] == second_leaf

        plan = await app.rewinds.plan(sid, 1)
        assert plan.root == str(mirror.root)
        assert sorted(plan.to_restore) == ["a.txt", "keep.txt", "sub/run.sh"]
        assert sorted(plan.to_delete) == ["b.txt"]
        assert plan.changed_externally == []
        done = await app.rewinds.rewind(sid, 1, plan.digest)
        assert done.remote is not None and done.remote.failed == [], done.remote
        assert sorted(done.remote.uploaded) == ["a.txt", "keep.txt", "sub/run.sh"]
        assert sorted(done.remote.deleted) == ["b.txt"]
        # Read back through the server: the files are as before the first turn.
        assert await on_server(client, wd) == seeded
        # The conversation's HEAD is where it was before the first turn's message: it had
        # no event then (None: the empty tree).
        assert done.remote.event_id == first_leaf and done.remote.conversation_error is None
        info = (await http.get(f"/api/conversations/{conv}")).json()
        assert info["leaf_event_id"] == first_leaf
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()


async def test_a_link_out_of_the_working_dir_is_not_followed(
        server: RunningServer, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    # The "agent" replaces the folder out/ by a link to a folder outside the working dir.
    script = f"rm -rf out && ln -s {outside} out"
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [script, "true"])
    try:
        assert (await turn(app, sid, "LINK")).outcome == "succeeded"
        plan = await app.rewinds.plan(sid, 1)
        assert plan.to_restore == ["out/f.txt"]
        done = await app.rewinds.rewind(sid, 1, plan.digest)
        assert done.remote is not None and done.remote.failed == ["out/f.txt"]
        assert "outside the working dir" in " ".join(done.remote.errors)
        assert list(outside.iterdir()) == []  # nothing written through the link
        # The next turn refuses to start (it would pull the server's copy over the rewind)
        # and says which file is not back.
        with pytest.raises(TandemError, match="out/f.txt"):
            await turn(app, sid, "NEXT")
        # Once the link is gone, the next turn first puts the file back, then runs.
        code, out = await client.execute_bash("rm out", wd)
        assert code == 0, out
        assert (await turn(app, sid, "AGAIN")).outcome == "succeeded"
        assert (await client.download(f"{wd}/out/f.txt")) == b"inside\n"
        assert not (app.remote_checkpoints.mirror(sid).base / "push.json").exists()
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()


async def test_a_rewind_that_rolls_back_leaves_the_server_alone(
        server: RunningServer, tmp_path: Path) -> None:
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [TURN1])
    try:
        assert (await turn(app, sid, "FIRST")).outcome == "succeeded"
        after = await on_server(client, wd)
        leaf = (await http.get(f"/api/conversations/{conv}")).json()["leaf_event_id"]
        plan = await app.rewinds.plan(sid, 1)
        seen: list[str] = []

        def fail_second(path: str) -> None:
            seen.append(path)
            if len(seen) == 2:
                raise OSError(28, "No space left on device")

        with pytest.raises(TandemError) as err:
            await app.rewinds.rewind(sid, 1, plan.digest, before_file=fail_second)
        assert err.value.code == "restore-failed"
        # The mirror was rolled back, nothing was recorded to push, the server and its
        # conversation are as the turn left them, and the turn is still there.
        mirror = app.remote_checkpoints.mirror(sid)
        assert not (mirror.base / "push.json").exists()
        assert await on_server(client, wd) == after
        assert (await http.get(f"/api/conversations/{conv}")).json()["leaf_event_id"] == leaf
        again = await app.rewinds.plan(sid, 1)
        assert again.digest == plan.digest
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()


async def test_a_backend_dying_before_the_push_pushes_on_the_next_turn(
        server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [TURN1])
    app2: App | None = None
    try:
        seeded = await on_server(client, wd)
        assert (await turn(app, sid, "FIRST")).outcome == "succeeded"
        after = await on_server(client, wd)

        async def die(*args: object) -> None:
            raise KeyboardInterrupt  # the process goes down after the rewind entry is synced

        monkeypatch.setattr("tandem.rewind.service.put_back_remote", die)
        with pytest.raises(KeyboardInterrupt):
            await app.rewinds.rewind(sid, 1, None)
        assert await on_server(client, wd) == after  # nothing reached the server
        pending = app.remote_checkpoints.mirror(sid).base / "push.json"
        assert pending.exists()
        monkeypatch.undo()
        # A new backend on the same home: the next turn pushes what the rewind left first.
        app2 = App(home=app.home, events=RecordingSink())
        app2.remote.remember_key(sid, KEY)
        app2.turns.engine.provider_for = app.turns.engine.provider_for
        assert [e["type"] for e in app2.sessions.entries(app2.sessions.journal(sid))
                ].count("rewind") == 1
        mirror_sync = await app2.remote_checkpoints.sync(sid)
        assert not pending.exists()
        assert await on_server(client, wd) == seeded
        assert mirror_sync[1].written == []  # the mirror already held the rewound files
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()
        if app2 is not None:
            await app2.aclose()


async def test_view_changes_review_and_revert_of_a_remote_turn(
        server: RunningServer, tmp_path: Path) -> None:
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [TURN1])
    try:
        assert (await turn(app, sid, "FIRST")).outcome == "succeeded"
        shown = await turn_patch(app, TurnPatchParams(session=sid, turn=1))
        assert shown.root == str(app.remote_checkpoints.mirror(sid).root)
        assert "-alpha" in shown.patch.diff and "+alpha one" in shown.patch.diff
        old = await before(app, BeforeParams(session=sid, turn=1, path="a.txt"))
        assert old.exists and old.text == "alpha\n"
        # Reverting one file of the turn puts it back on the server, the rest stays.
        entry = (await app.review.revert(sid, 1, "a.txt", None, None)).root
        assert entry["remote"]["uploaded"] == ["a.txt"] and entry["remote"]["failed"] == []
        assert await client.download(f"{wd}/a.txt") == b"alpha\n"
        assert await client.download(f"{wd}/b.txt") == b"bee\n"
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()


async def test_a_working_dir_holding_one_repository_is_mirrored_as_itself(
        server: RunningServer, tmp_path: Path) -> None:
    # 1.58.2 archives the one git repository below a working dir that is not one itself;
    # the listing lists the working dir, and the archive is used only for a work tree.
    app = App(home=tmp_path / "home", events=RecordingSink())
    project = tmp_path / "project"
    project.mkdir()
    sid = (await new(app, NewParams(cwd=str(project)))).id
    target = await app.remote.attach(sid, "box", server.url, KEY,
                                     f"workspace/nested-{secrets.token_hex(4)}")
    wd = target.resolved_working_dir
    async with AgentServerClient(server.url, KEY) as client:
        code, out = await client.execute_bash(
            f"mkdir -p {wd}/inner && cd {wd}/inner && git init -q && echo x > f.txt", "/")
        assert code == 0, out
    try:
        mirror, synced = await app.remote_checkpoints.sync(sid)
        assert synced.written == ["inner/f.txt"]
        assert (mirror.root / "inner" / "f.txt").read_text() == "x\n"
        assert not (mirror.root / "inner" / ".git").exists()
    finally:
        await app.aclose()


async def test_shell_quoting_of_odd_file_names(server: RunningServer, tmp_path: Path) -> None:
    # Names the agent made that a shell would read as commands or options.
    script = ("printf 1 > 'a b.txt' && printf 2 > '$(touch PWNED).txt' && "
              "printf 3 > \"it's.txt\" && printf 4 > ./-rf && printf 5 > '; rm -rf ~'")
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [script])
    try:
        seeded = await on_server(client, wd)
        assert (await turn(app, sid, "ODD")).outcome == "succeeded"
        done = await app.rewinds.rewind(sid, 1, None)
        assert done.remote is not None and done.remote.failed == [], done.remote
        assert sorted(done.remote.deleted) == sorted(
            ["a b.txt", "$(touch PWNED).txt", "it's.txt", "-rf", "; rm -rf ~"])
        assert await on_server(client, wd) == seeded
        code, out = await client.execute_bash("ls -a ~; test ! -e PWNED", wd)
        assert code == 0, out
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()


_CRASHER = r"""
import asyncio, os, sys
from pathlib import Path
from tandem.app import App
from tandem.store.journal import Journal

home, sid, key = sys.argv[1], sys.argv[2], sys.argv[3]
real_append = Journal.append

def append(self, entry):
    # The mirror is restored, push.json lists its files, the rewind entry is never written.
    if isinstance(entry, dict) and entry.get("type") == "rewind":
        os._exit(17)
    return real_append(self, entry)

Journal.append = append

async def main():
    app = App(home=Path(home))
    app.remote.remember_key(sid, key)
    await app.rewinds.rewind(sid, 1, None)

asyncio.run(main())
sys.exit(3)  # the rewind finished: the fault never fired
"""


async def test_a_crash_before_the_rewind_entry_pushes_nothing(
        server: RunningServer, tmp_path: Path) -> None:
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [TURN1])
    app2: App | None = None
    try:
        assert (await turn(app, sid, "FIRST")).outcome == "succeeded"
        after = await on_server(client, wd)
        await app.turns.aclose()
        app.sessions.manager.close()  # the journal's lock goes with this backend
        proc = subprocess.run([sys.executable, "-c", _CRASHER, str(app.home), sid, KEY],
                              capture_output=True, text=True, check=False, timeout=180)
        assert proc.returncode == 17, proc.stderr
        mirror = app.remote_checkpoints.mirror(sid)
        assert (mirror.base / "push.json").exists()
        assert await on_server(client, wd) == after  # the crash came before any push
        # A new backend syncs first thing (no plan, no turn has opened the session yet):
        # the rewind is settled (rolled back: no entry) before anything is pushed, so the
        # server never gets the rewound files of a rewind that did not happen.
        app2 = App(home=app.home, events=RecordingSink())
        app2.remote.remember_key(sid, KEY)
        await app2.remote_checkpoints.sync(sid)
        assert await on_server(client, wd) == after
        entries = app2.sessions.entries(app2.sessions.journal(sid))
        assert "rewind" not in [e["type"] for e in entries]
        assert [e["outcome"] for e in entries if e["type"] == "rewind_recovery"] == [
            "rolled-back"]
        assert not (mirror.base / "push.json").exists()
    finally:
        await http.aclose()
        await client.aclose()
        if app2 is not None:
            await app2.aclose()


async def test_a_rewind_never_pushes_into_another_working_dir(
        server: RunningServer, tmp_path: Path) -> None:
    app, sid, wd, conv, client, http = await setup(server, tmp_path, [TURN1])
    try:
        assert (await turn(app, sid, "FIRST")).outcome == "succeeded"
        other = await app.remote.attach(sid, "box", server.url, KEY,
                                        f"workspace/other-{secrets.token_hex(4)}")
        code, out = await client.execute_bash(f"mkdir -p {other.resolved_working_dir}", "/")
        assert code == 0, out
        # The first turn's checkpoints are of the first working dir's mirror.
        with pytest.raises(TandemError) as err:
            await app.rewinds.plan(sid, 1)
        assert err.value.code == "no-checkpoint"
        code, out = await client.execute_bash("ls -A", other.resolved_working_dir)
        assert code == 0 and out.strip() == "", out
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()


async def server_tree(client: AgentServerClient, wd: str) -> dict[str, str]:
    """Every regular file under WD on the server (not .git): its sha1, and 'x' if executable."""
    code, out = await client.execute_bash(
        "find . -path ./.git -prune -o -type f -exec sha1sum {} + | sort; "
        "find . -path ./.git -prune -o -type f -perm -u+x -print | sort", wd)
    assert code == 0, out
    tree: dict[str, str] = {}
    for line in out.splitlines():
        digest, _, rel = line.partition("  ")
        if rel:
            tree[rel.removeprefix("./")] = digest
        elif line.startswith("./"):
            tree[line.removeprefix("./")] += " x"
    return tree


def mirror_tree(root: Path) -> dict[str, str]:
    """The same for the mirror (which holds no links)."""
    tree: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        assert not path.is_symlink(), path
        if path.is_file():
            digest = hashlib.sha1(path.read_bytes()).hexdigest()
            tree[path.relative_to(root).as_posix()] = digest + (
                " x" if path.stat().st_mode & 0o100 else "")
    return tree


async def test_a_sync_after_a_turn_fetches_only_what_changed(
        server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = App(home=tmp_path / "home", events=RecordingSink())
    project = tmp_path / "project"
    project.mkdir()
    sid = (await new(app, NewParams(cwd=str(project)))).id
    target = await app.remote.attach(sid, "box", server.url, KEY,
                                     f"workspace/many-{secrets.token_hex(4)}")
    wd = target.resolved_working_dir
    requests: list[str] = []
    fetched: list[tuple[str, int]] = []
    real_init, real_download = AgentServerClient.__init__, AgentServerClient.download_to

    def init(self: AgentServerClient, *args: Any, **kw: Any) -> None:
        real_init(self, *args, **kw)

        async def seen(request: httpx.Request) -> None:
            requests.append(f"{request.method} {request.url.path}")

        self._http.event_hooks["request"].append(seen)

    async def download_to(self: AgentServerClient, remote_path: str, dest: Path,
                          *args: Any, **kw: Any) -> int:
        size = await real_download(self, remote_path, dest, *args, **kw)
        fetched.append((remote_path.removeprefix(wd + "/"), size))
        return size

    monkeypatch.setattr(AgentServerClient, "__init__", init)
    monkeypatch.setattr(AgentServerClient, "download_to", download_to)
    async with AgentServerClient(server.url, KEY) as client:
        code, out = await client.execute_bash(
            f"mkdir -p {wd} && cd {wd} && git init -q && for d in 0 1 2 3 4 5 6 7 8 9; do "
            "mkdir -p d$d; for f in 0 1 2 3 4 5 6 7 8 9 a b c d e f g h i j; do "
            "printf 'file %s %s\\n' $d $f > d$d/f$f.txt; done; done && "
            "printf 'same size\\n' > same.txt && touch -d '2020-01-01 00:00' same.txt && "
            "printf 'moved\\n' > old.txt && printf 'gone\\n' > gone.txt && "
            "printf 'run\\n' > run.sh", "/")
        assert code == 0, out
        try:
            mirror, first = await app.remote_checkpoints.sync(sid)
            assert first.files == 204 and mirror_tree(mirror.root) == await server_tree(
                client, wd)
            # What a turn might do: one file changed keeping its size and mtime, a rename,
            # a delete, a mode change, a link (never mirrored) and a new empty folder.
            code, out = await client.execute_bash(
                "printf 'SAME SIZE\\n' > same.txt && touch -d '2020-01-01 00:00' same.txt && "
                "mv old.txt new.txt && rm gone.txt && chmod +x run.sh && "
                "ln -s d0/f0.txt link && mkdir empty", wd)
            assert code == 0, out
            requests.clear()
            fetched.clear()
            _, second = await app.remote_checkpoints.sync(sid)
            assert fetched == [("same.txt", 10)]  # the rename's bytes are in the mirror already
            assert sorted(second.written) == ["new.txt", "run.sh", "same.txt"]
            assert second.removed == ["gone.txt", "old.txt"]
            assert requests == ["POST /api/bash/execute_bash_command",
                                "GET /api/file/download"], requests
            assert mirror_tree(mirror.root) == await server_tree(client, wd)
            assert (mirror.root / "empty").is_dir() and not (mirror.root / "link").exists()
            await server_tree(client, wd)
            requests.clear()
            fetched.clear()
            _, third = await app.remote_checkpoints.sync(sid)  # nothing changed: one request
            assert (requests, fetched, third.written, third.removed) == (
                ["POST /api/bash/execute_bash_command"], [], [], [])
            # A file turned into a folder holding its bytes under a new name: copied
            # locally before the file makes way for the folder.
            code, out = await client.execute_bash(
                "mv d3/f0.txt d3.tmp && rm -r d3 && mkdir -p d3/f0.txt && "
                "mv d3.tmp d3/f0.txt/inner", wd)
            assert code == 0, out
            fetched.clear()
            _, fourth = await app.remote_checkpoints.sync(sid)
            assert fetched == [] and fourth.written == ["d3/f0.txt/inner"]
            assert mirror_tree(mirror.root) == await server_tree(client, wd)
        finally:
            await app.aclose()


async def test_a_turn_that_ran_no_action_skips_its_after_sync_and_misses_no_change(
        server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No action ran (`workspace_untouched`): one sync, before the turn, not two.

    What changed on the server meanwhile (here: while that turn ran, and between
    turns) is in the mirror from the next turn's before-sync on, and in no turn's
    patch: it is not the agent's.
    """
    outside = "printf 'theirs\\n' > outside.txt && printf 'alpha again\\n' > a.txt"
    later = "printf 'later\\n' > later.txt"
    app, sid, wd, _conv, client, http = await setup(
        server, tmp_path, [outside, "true", "printf 'mine\\n' > mine.txt"])
    agent = app.turns.engine.provider_for(None, None)  # type: ignore[arg-type]
    agent.untouched = [True, True, False]
    syncs: list[str] = []
    real_sync = type(app.remote_checkpoints).sync

    async def counted(self: Any, session: str) -> Any:
        syncs.append(session)
        return await real_sync(self, session)

    monkeypatch.setattr(type(app.remote_checkpoints), "sync", counted)
    try:
        one = await turn(app, sid, "NOTHING RAN")
        assert one.outcome == "succeeded", one.error
        assert len(syncs) == 1  # the before-sync alone
        assert one.files_changed == []  # the outside change is not this turn's
        mirror = app.remote_checkpoints.mirror(sid)
        assert (mirror.root / "a.txt").read_text() == "alpha\n"  # not synced yet
        # Between turns, on the server, by someone else.
        code, out = await client.execute_bash(later, wd)
        assert code == 0, out
        two = await turn(app, sid, "NOTHING AGAIN")
        assert len(syncs) == 2 and two.files_changed == []
        # The second turn's before-sync brought in both changes: the mirror is the server.
        assert mirror_tree(mirror.root) == await server_tree(client, wd)
        assert (mirror.root / "outside.txt").read_text() == "theirs\n"
        assert (mirror.root / "later.txt").read_text() == "later\n"
        three = await turn(app, sid, "A COMMAND RAN")
        assert len(syncs) == 4  # before and after
        assert three.files_changed == ["mine.txt"]
        assert mirror_tree(mirror.root) == await server_tree(client, wd)
        # Rewinding the third turn takes back its own file alone.
        plan = await app.rewinds.plan(sid, 3)
        assert sorted(plan.to_delete) == ["mine.txt"] and plan.to_restore == []
    finally:
        await http.aclose()
        await client.aclose()
        await app.aclose()
