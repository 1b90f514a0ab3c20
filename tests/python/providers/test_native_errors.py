"""Provider errors, bounded retries, broken streams and cancellation, on both wire formats."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import anyio
import pytest
from fakes.script import Reply, Script, ToolCallSpec
from native_helpers import (
    FAMILIES,
    KEY,
    RecordingSink,
    api_path,
    make_fake,
    make_provider,
    request,
)

from tandem.providers.registry import build_provider

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("family", FAMILIES)
async def test_429_then_success_honours_retry_after(family: str, workspace: Path) -> None:
    script = [
        Reply(status=429, headers={"retry-after": "0.3"}, message="Rate limited: slow down"),
        Reply(text="finally"),
    ]
    with make_fake(family, script) as fake:
        sink = RecordingSink()
        started = time.monotonic()
        result = await make_provider(family, fake).run(request(workspace), sink)
        elapsed = time.monotonic() - started
    assert result.outcome == "succeeded", result.error
    assert sink.streamed() == "finally"
    assert len(fake.api_requests(api_path(family))) == 2
    assert elapsed >= 0.3  # waited as told, not the 0.01 s backoff


@pytest.mark.parametrize("family", FAMILIES)
async def test_429_retries_are_bounded(family: str, workspace: Path) -> None:
    busy = Reply(status=429, headers={"retry-after": "0"}, message="Rate limited: quota")
    with make_fake(family, Script(default=busy)) as fake:
        result = await make_provider(family, fake, max_retries=2).run(
            request(workspace), RecordingSink()
        )
    assert result.outcome == "failed"
    assert "HTTP 429" in (result.error or "") and "Rate limited: quota" in (result.error or "")
    assert "after 3 attempts" in (result.error or "")
    assert len(fake.api_requests(api_path(family))) == 3


@pytest.mark.parametrize("family", FAMILIES)
async def test_retry_after_too_long_fails_at_once(family: str, workspace: Path) -> None:
    busy = Reply(status=429, headers={"retry-after": "3600"}, message="come back later")
    with make_fake(family, [busy]) as fake:
        result = await make_provider(family, fake).run(request(workspace), RecordingSink())
    assert result.outcome == "failed"
    assert "come back later" in (result.error or "") and "3600" in (result.error or "")
    assert len(fake.api_requests(api_path(family))) == 1


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("status", [500, 503, 529])
async def test_5xx_is_retried_with_backoff(family: str, status: int, workspace: Path) -> None:
    script = [
        Reply(status=status, message="overloaded"),
        Reply(status=status, message="again"),
        Reply(text="ok"),
    ]
    with make_fake(family, script) as fake:
        result = await make_provider(family, fake).run(request(workspace), RecordingSink())
    assert result.outcome == "succeeded", result.error
    assert len(fake.api_requests(api_path(family))) == 3


@pytest.mark.parametrize("family", FAMILIES)
async def test_401_fails_with_the_providers_message(family: str, workspace: Path) -> None:
    # Some APIs echo the key back in the message; it must not reach the result.
    bad = Reply(status=401, message=f"Incorrect API key provided: {KEY}")
    with make_fake(family, [bad]) as fake:
        result = await make_provider(family, fake).run(request(workspace), RecordingSink())
    assert result.outcome == "failed"
    assert result.error is not None and result.error.startswith("HTTP 401: ")
    assert "Incorrect API key provided: ***" in result.error and KEY not in result.error
    assert len(fake.api_requests(api_path(family))) == 1


@pytest.mark.parametrize("family", FAMILIES)
async def test_broken_stream_fails_the_turn(family: str, workspace: Path) -> None:
    text = "This answer will be cut off in the middle."
    with make_fake(family, [Reply(text=text, broken=True, chunk_size=4)]) as fake:
        sink = RecordingSink()
        result = await make_provider(family, fake).run(request(workspace), sink)
    assert result.outcome == "failed"
    assert result.error is not None and result.error.startswith("stream broken")
    shown = sink.streamed()
    assert shown and text.startswith(shown) and shown != text
    assert sink.calls[-1] == ("end_message", None)  # the partial text is kept
    assert len(fake.api_requests(api_path(family))) == 1  # output began: no retry


async def test_anthropic_in_stream_error_event(workspace: Path) -> None:
    reply = Reply(text="partial", stream_error=True, message="Overloaded")
    with make_fake("anthropic", [reply]) as fake:
        result = await make_provider("anthropic", fake).run(request(workspace), RecordingSink())
    assert result.outcome == "failed" and result.error == "overloaded_error: Overloaded"


async def test_openai_in_stream_error_chunk(workspace: Path) -> None:
    reply = Reply(text="partial", stream_error=True, message="model crashed")
    with make_fake("openai", [reply]) as fake:
        result = await make_provider("openai", fake).run(request(workspace), RecordingSink())
    assert result.outcome == "failed" and result.error == "stream error: model crashed"


@pytest.mark.parametrize("family", FAMILIES)
async def test_connection_refused_is_retried_then_fails(family: str, workspace: Path) -> None:
    fake = make_fake(family, [])
    fake.start()
    provider = make_provider(family, fake, max_retries=1)
    fake.stop()  # nothing listens on the port any more
    result = await provider.run(request(workspace), RecordingSink())
    assert result.outcome == "failed"
    assert (result.error or "").startswith("connection failed")


async def _wait_for(cond, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    with anyio.fail_after(timeout):
        while not cond():
            await anyio.sleep(0.01)


@pytest.mark.parametrize("family", FAMILIES)
async def test_cancel_mid_stream_is_aborted(family: str, workspace: Path) -> None:
    with make_fake(family, [Reply(text="streaming forever", stall=True)]) as fake:
        provider = make_provider(family, fake)
        sink = RecordingSink()
        results = []

        async def go() -> None:
            results.append(await provider.run(request(workspace), sink))

        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await _wait_for(lambda: sink.streamed() == "streaming forever")
            tg.cancel_scope.cancel()
        await provider.close()
    (result,) = results
    assert result.outcome == "aborted"
    assert sink.calls[-1] == ("end_message", None)


@pytest.mark.parametrize("family", FAMILIES)
async def test_task_cancel_while_asking_permission(family: str, workspace: Path) -> None:
    write = ToolCallSpec(name="write_file", input={"path": "b.txt", "content": "x"})
    gate = asyncio.Event()

    class SlowSink(RecordingSink):
        async def ask_permission(self, request):  # type: ignore[no-untyped-def]
            gate.set()
            await asyncio.sleep(30)
            return "allow_once"

    with make_fake(family, [Reply(tool_calls=[write])]) as fake:
        sink = SlowSink()
        task = asyncio.create_task(make_provider(family, fake).run(request(workspace), sink))
        await asyncio.wait_for(gate.wait(), 5)
        task.cancel()
        result = await task
    assert result.outcome == "aborted"
    assert not (workspace / "b.txt").exists()
    (res,) = sink.of("tool_result")
    assert res["status"] == "failed" and res["output"] == "cancelled"


@pytest.mark.parametrize("family", FAMILIES)
async def test_key_never_reaches_sink_result_or_logs(
    family: str,
    workspace: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The key comes from the environment, where a shell command could read it.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (workspace / ".env").write_text(f"SECRET={KEY}\n")
    home = tmp_path / "tandem-home"
    home.mkdir()
    journal = home / "journal.jsonl"
    script = [
        Reply(status=429, headers={"retry-after": "0"}, message=f"limit for key {KEY}"),
        Reply(
            text="ok",
            tool_calls=[ToolCallSpec(name="shell", input={"command": "env | sort; cat .env"})],
        ),
        Reply(status=401, message=f"Invalid key {KEY}"),
    ]
    caplog.set_level(logging.DEBUG)
    with make_fake(family, script) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        provider = build_provider(f"{family}:fake-model", {"native": {"backoff": 0.01}})
        sink = RecordingSink(answers=["allow_once"], journal=journal)
        result = await provider.run(request(workspace, model=""), sink)
    assert result.outcome == "failed"
    (home / "result.json").write_text(result.model_dump_json())
    sent = fake.api_requests(api_path(family))
    assert KEY in json.dumps(sent[0]["headers"])  # the key did go to the server
    assert sent[0].body["model"] == "fake-model"
    shell_out = sink.of("tool_result")[0]["output"]
    assert "SECRET=***" in shell_out and "OPENAI_API_KEY" not in shell_out
    for path in home.rglob("*"):
        assert KEY not in path.read_text(), f"key leaked into {path}"
    assert KEY not in json.dumps(sink.calls)
    assert KEY not in caplog.text


@pytest.mark.parametrize("family", FAMILIES)
async def test_a_failing_sink_ends_the_turn_as_failed(family: str, workspace: Path) -> None:
    write = ToolCallSpec(name="write_file", input={"path": "b.txt", "content": "x"})

    class BrokenSink(RecordingSink):
        async def ask_permission(self, request):  # type: ignore[no-untyped-def]
            raise RuntimeError("Emacs went away")

    with make_fake(family, [Reply(tool_calls=[write])]) as fake:
        sink = BrokenSink()
        result = await make_provider(family, fake).run(request(workspace), sink)
    assert result.outcome == "failed"
    assert result.error == "internal error: RuntimeError: Emacs went away"
    assert not (workspace / "b.txt").exists()
    assert sink.of("tool_result") == [
        {
            "id": sink.of("tool_call")[0]["id"],
            "status": "failed",
            "output": "internal error: Emacs went away",
        }
    ]


@pytest.mark.parametrize("family", FAMILIES)
async def test_missing_root_or_model_fails_before_any_request(
    family: str, workspace: Path, tmp_path: Path
) -> None:
    with make_fake(family, []) as fake:
        provider = make_provider(family, fake)
        gone = await provider.run(request(tmp_path / "gone"), RecordingSink())
        nomodel = await provider.run(request(workspace, model=""), RecordingSink())
    assert gone.outcome == "failed" and "is missing" in (gone.error or "")
    assert nomodel.outcome == "failed" and "no model given" in (nomodel.error or "")
    assert fake.requests == []
