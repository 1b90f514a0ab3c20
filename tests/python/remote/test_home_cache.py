"""The per-host home cache, observed on a real socket: one lookup for N callers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.remote.home_cache import HomeCache
from tandem.remote.service import RemoteService

from .fake_server import FakeAgentServer


async def _wait_for(cond, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


def test_concurrent_lookups_share_one_request(fake: FakeAgentServer, tmp_path: Path) -> None:
    svc = RemoteService(tmp_path)

    async def run() -> list[str]:
        fake.release.clear()  # hold the first lookup so the others overlap it
        tasks = [
            asyncio.create_task(svc.resolve(fake.url, None, f"workspace/project/{i}"))
            for i in range(20)
        ]
        await _wait_for(lambda: fake.home_requests >= 1)
        await asyncio.sleep(0.3)  # time for any stray lookup to reach the server
        assert fake.home_requests == 1
        fake.release.set()
        return await asyncio.gather(*tasks)

    resolved = asyncio.run(run())
    assert resolved == [f"{fake.home}/workspace/project/{i}" for i in range(20)]
    assert fake.home_requests == 1
    # Later callers reuse the remembered home: still one request.
    assert asyncio.run(svc.resolve(fake.url, None, "again")) == f"{fake.home}/again"
    assert fake.home_requests == 1


def test_failed_lookup_is_not_cached(fake: FakeAgentServer, tmp_path: Path) -> None:
    svc = RemoteService(tmp_path)
    fake.fail_home = 1
    with pytest.raises(TandemError) as err:
        asyncio.run(svc.resolve(fake.url, None, "w"))
    assert "Internal Server Error" in err.value.message and "HTTP 500" in err.value.message
    assert svc.cache.cached(svc.client(fake.url, None).cache_key) is None
    assert asyncio.run(svc.resolve(fake.url, None, "w")) == f"{fake.home}/w"
    assert fake.home_requests == 2


def test_concurrent_callers_all_see_a_shared_failure(fake: FakeAgentServer, tmp_path: Path) -> None:
    svc = RemoteService(tmp_path)
    fake.fail_home = 1

    async def run() -> list[object]:
        fake.release.clear()
        tasks = [asyncio.create_task(svc.resolve(fake.url, None, "w")) for _ in range(5)]
        await _wait_for(lambda: fake.home_requests >= 1)
        await asyncio.sleep(0.2)
        fake.release.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    results = asyncio.run(run())
    assert all(isinstance(r, TandemError) for r in results)
    assert fake.home_requests == 1
    assert asyncio.run(svc.resolve(fake.url, None, "w")) == f"{fake.home}/w"
    assert fake.home_requests == 2


def test_cancelled_waiter_does_not_cancel_the_others(fake: FakeAgentServer, tmp_path: Path) -> None:
    svc = RemoteService(tmp_path)

    async def run() -> str:
        fake.release.clear()
        first = asyncio.create_task(svc.resolve(fake.url, None, "a"))
        second = asyncio.create_task(svc.resolve(fake.url, None, "b"))
        await _wait_for(lambda: fake.home_requests >= 1)
        first.cancel()
        await asyncio.sleep(0.05)
        fake.release.set()
        with pytest.raises(asyncio.CancelledError):
            await first
        return await second

    assert asyncio.run(run()) == f"{fake.home}/b"
    assert fake.home_requests == 1


def test_hosts_are_cached_separately(server_home: Path, tmp_path: Path) -> None:
    other_home = tmp_path / "other"
    other_home.mkdir()
    svc = RemoteService(tmp_path)
    with FakeAgentServer(str(server_home)) as a, FakeAgentServer(str(other_home) + "/") as b:
        assert asyncio.run(svc.resolve(a.url, None, "w")) == f"{server_home}/w"
        # b reports its home with a trailing slash: stripped before joining.
        assert asyncio.run(svc.resolve(b.url + "/", None, "w")) == f"{other_home}/w"
        assert (a.home_requests, b.home_requests) == (1, 1)
        assert sorted(svc.cache.hosts().values()) == sorted([str(server_home), str(other_home)])


def test_cache_refuses_a_non_absolute_home(tmp_path: Path) -> None:
    cache = HomeCache()

    async def fetch() -> str:
        return "relative/home"

    with pytest.raises(TandemError, match="not absolute"):
        asyncio.run(cache.get("http://h", fetch))
    assert cache.cached("http://h") is None


def test_keys_do_not_share_lookups(keyed: FakeAgentServer, tmp_path: Path) -> None:
    svc = RemoteService(tmp_path)

    async def run() -> list[object]:
        keyed.release.clear()
        tasks = [
            asyncio.create_task(svc.resolve(keyed.url, None, "w")),
            asyncio.create_task(svc.resolve(keyed.url, "s3cret-key", "w")),
        ]
        # Two separate requests reach the server: the keyed one is held there.
        await _wait_for(lambda: keyed.home_requests >= 1 and len(keyed.seen_keys) >= 2)
        keyed.release.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    nokey, withkey = asyncio.run(run())
    assert isinstance(nokey, TandemError) and nokey.code == "unauthorized"
    assert withkey == f"{keyed.home}/w"
