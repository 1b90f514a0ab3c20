"""A session's provider switch, its token totals and a server's model list, end to end.

Real journal, real turn engine, the real fake OpenAI server (real HTTP).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.adapters import providers as providers_api
from tandem.adapters import sessions as sessions_api
from tandem.adapters import turns as turn_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.providers import ModelsParams
from tandem.protocol.sessions import NewParams, UsageParams
from tandem.protocol.turns import SendParams, SetProviderParams


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_switch_is_journaled_used_by_the_next_turn_and_counted(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        events = RecordingSink()
        app = App(home=tmp_path / "home", events=events)
        replies = [Reply(text="first", input_tokens=10, output_tokens=3, cache_read_tokens=4),
                   Reply(text="second", input_tokens=20, output_tokens=6)]
        with FakeOpenAI(replies) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
            info = await new(app, NewParams(cwd=str(project)))
            try:
                app.turns.config.default_provider = "openai:default-model"
                one = await turn_api.send(app, SendParams(session=info.id, text="a"))
                await app.turns.engine.wait(info.id, one.turn)
                entry = (await turn_api.set_provider(
                    app, SetProviderParams(session=info.id, provider="openai:other-model"))).root
                two = await turn_api.send(app, SendParams(session=info.id, text="b"))
                await app.turns.engine.wait(info.id, two.turn)
                totals = (await sessions_api.usage(app, UsageParams(session=info.id))).model_dump()
            finally:
                await app.turns.aclose()
            bodies = [r.body for r in fake.api_requests("/v1/chat/completions")]
        assert entry["type"] == "provider_change" and entry["model"] == "other-model"
        assert "turn" not in entry
        assert [b["model"] for b in bodies] == ["default-model", "other-model"]
        assert ("entry", "provider_change") in [
            (k, (d.get("entry") or {}).get("type")) for _, k, d in events.events]
        assert totals["total"] == {"turns": 2, "input_tokens": 30, "output_tokens": 9,
                                   "cache_read_tokens": 4, "cache_write_tokens": 0}
        assert totals["provider"] == "openai:other-model" and totals["chosen"] is True
        assert [(p["provider"], p["input_tokens"]) for p in totals["by_provider"]] == [
            ("openai:default-model", 10), ("openai:other-model", 20)]

    asyncio.run(main())


def test_malformed_provider_is_refused_and_nothing_written(project: Path, tmp_path: Path) -> None:
    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        info = await new(app, NewParams(cwd=str(project)))
        before = len(list(app.sessions.journal(info.id).entries()))
        with pytest.raises(TandemError) as err:
            await turn_api.set_provider(app, SetProviderParams(session=info.id,
                                                                   provider="gpt-4o"))
        assert err.value.code == "invalid"
        assert len(list(app.sessions.journal(info.id).entries())) == before
        await app.turns.aclose()

    asyncio.run(main())


def test_models_are_listed_with_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with FakeOpenAI([]) as fake:
            monkeypatch.setenv("OPENAI_API_KEY", "sk-listing")
            reply = await providers_api.models(
                app, ModelsParams(family="openai", base_url=fake.base_url + "/v1"))
            (req,) = [r for r in fake.requests if r.path == "/v1/models"]
        assert reply.models == ["fake-model"]
        assert req["headers"]["authorization"] == "Bearer sk-listing"

    asyncio.run(main())


def test_a_server_that_never_answers_is_a_clear_error_in_bounded_time(tmp_path: Path) -> None:
    # A socket that accepts and never answers: the listing must give up.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(5)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(sock.accept()[0]), daemon=True).start()

    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        with pytest.raises(TandemError) as err:
            await providers_api.models(app, ModelsParams(family="openai", base_url=url,
                                                        timeout=0.5))
        assert err.value.code == "provider" and "did not answer" in err.value.message

    try:
        asyncio.run(main())
    finally:
        sock.close()


def test_the_kept_choice_is_the_journal_walk_after_every_append(tmp_path: Path) -> None:
    """`ProviderChoice` (what a send reads) equals `session_provider_choice` over the
    whole journal after each append, and starts over with a journal read afresh."""
    import random

    from tandem.store.entry_cache import EntryCache
    from tandem.store.journal import Journal
    from tandem.turns.usage import ProviderChoice, session_provider_choice

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    journal = Journal.create(tmp_path / "home", str(cwd), title="t")
    cache, rng = EntryCache(), random.Random(2)
    for n in range(1, 80):
        kind = rng.random()
        if kind < 0.2:
            journal.append({"type": "provider_change", "provider": f"openai:m{n}"})
        else:
            journal.append({"type": "user", "turn": n, "text": f"u{n}"})
        if rng.random() < 0.5:
            path = Path(journal.path)
            assert cache.view(path, ProviderChoice).chosen == session_provider_choice(
                cache.entries(path))
    journal.close()
    # A journal cut back (a repair): a fresh read, a fresh view.
    path = Path(journal.path)
    lines = path.read_bytes().splitlines(keepends=True)
    cut = next(i for i in range(len(lines) - 1, 0, -1) if b"provider_change" in lines[i])
    path.write_bytes(b"".join(lines[:cut]))
    assert cache.view(path, ProviderChoice).chosen == session_provider_choice(
        cache.entries(path))
