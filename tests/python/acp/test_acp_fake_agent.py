"""AcpProvider against a scripted ACP agent process (fake_agent.py): the real
protocol over real pipes, with failures the real adapter cannot be made to
produce on demand."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from acp_helpers import RecordingSink, chat, living_pgroup, pid_alive

from tandem.protocol.base import TandemError
from tandem.providers import acp as acp_module
from tandem.providers.acp import AcpAgentConfig, AcpProvider
from tandem.providers.base import Message, TurnRequest

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")


class Agent:
    """A scripted agent: its command line and what it received."""

    def __init__(self, tmp: Path, script: dict[str, Any]) -> None:
        self.script_path = tmp / "agent-script.json"
        self.script_path.write_text(json.dumps(script))
        self.log_path = tmp / "agent-log.jsonl"
        self.command = [sys.executable, str(FAKE_AGENT), str(self.script_path), str(self.log_path)]

    def log(self, method: str | None = None) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        lines = [json.loads(x) for x in self.log_path.read_text().splitlines()]
        return [x for x in lines if method is None or x["method"] == method]

    def provider(self, **kwargs: Any) -> AcpProvider:
        env = kwargs.pop("env", {})
        return AcpProvider("fake", self.command, env, **kwargs)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _run_and_close(provider: AcpProvider, *requests: tuple[TurnRequest, RecordingSink]):
    try:
        return [await provider.run(r, s) for r, s in requests]
    finally:
        await provider.close()


def test_stream_thought_plan_tool_and_usage_map_to_sink(tmp_path: Path, root: Path) -> None:
    agent = Agent(
        tmp_path,
        {
            "prompts": [
                [
                    {"think": "hmm"},
                    {"say": "Hello "},
                    {"say": "world"},
                    {"plan": [["read code", "in_progress"]]},
                    {"tool": {"id": "t1", "title": "Read a.txt", "kind": "read", "input": {}}},
                    {"update": {"id": "t1", "input": {"path": "a.txt"}}},
                    {"update": {"id": "t1", "status": "completed", "output": "contents"}},
                    {"say": "done"},
                ]
            ]
        },
    )
    sink = RecordingSink()
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "hi"), sink)))
    assert result.outcome == "succeeded", result.error
    assert sink.streamed() == "Hello worlddone"
    assert sink.of("reasoning") == [("reasoning", "hmm")]
    assert sink.of("plan") == [
        ("plan", [{"content": "read code", "priority": "medium", "status": "in_progress"}])
    ]
    # The call is reported once, with the input that arrived in a later update.
    assert sink.of("tool_call") == [
        ("tool_call", "t1", "Read a.txt", "read", "Read a.txt", {"path": "a.txt"})
    ]
    assert sink.of("tool_result") == [("tool_result", "t1", "completed", "contents")]
    kinds = sink.kinds()
    assert kinds.index("end_message") < kinds.index("tool_call") < kinds.index("tool_result")
    assert kinds[-1] == "end_message"
    assert result.acp_session_id and result.acp_session_id.startswith("s-")
    assert agent.log("session/new")[0]["params"]["cwd"] == str(root)


def test_environment_is_controlled_and_cwd_is_root(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IS_SANDBOX", "yes")
    monkeypatch.setenv("TANDEM_SECRET_TEST", "leak")
    script = {
        "prompts": [
            [
                {"env": "IS_SANDBOX"},
                {"say": "|"},
                {"env": "TANDEM_SECRET_TEST"},
                {"say": "|"},
                {"env": "CONFIGURED"},
                {"say": "|"},
                {"cwd": True},
            ]
        ]
    }
    agent = Agent(tmp_path, script)
    sink = RecordingSink()
    run(_run_and_close(agent.provider(env={"CONFIGURED": "yes"}), (chat(root, "env?"), sink)))
    assert sink.streamed().split("|") == ["<unset>", "<unset>", "yes", str(root)]


def _write_script(target: Path, kind: str = "edit") -> dict[str, Any]:
    return {
        "prompts": [
            [
                {"say": "writing"},
                {
                    "ask": {
                        "id": "w1",
                        "title": "Write out.txt",
                        "kind": kind,
                        "input": {"file_path": str(target), "content": "x"},
                        "write": str(target),
                        "content": "x",
                    }
                },
            ]
        ]
    }


# An "always" for an edit stays with tandem (the agent gets "allow"): an agent told
# "always" stops asking, and a later write to a protected path would go unasked.
@pytest.mark.parametrize(
    ("answer", "kind", "option"), [("allow_once", "edit", "yes"),
                                   ("allow_session", "edit", "yes"),
                                   ("allow_session", "execute", "yes-always")]
)
def test_permission_answer_maps_to_agent_option(
    tmp_path: Path, root: Path, answer: str, kind: str, option: str
) -> None:
    target = root / "out.txt"
    agent = Agent(tmp_path, _write_script(target, kind))
    sink = RecordingSink(answer)  # type: ignore[arg-type]
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "write"), sink)))
    assert result.outcome == "succeeded"
    assert target.read_text() == "x"
    (asked,) = sink.asked
    assert (asked.call_id, asked.kind, asked.title) == ("w1", kind, "Write out.txt")
    assert asked.input == {"file_path": str(target), "content": "x"}
    assert agent.log("permission-outcome")[0]["params"]["option"] == option
    assert sink.kinds().index("tool_call") < sink.kinds().index("ask")
    assert sink.of("tool_result") == [("tool_result", "w1", "completed", "written")]


def test_user_rejection_refuses_the_call(tmp_path: Path, root: Path) -> None:
    target = root / "out.txt"
    agent = Agent(tmp_path, _write_script(target))
    sink = RecordingSink("reject")
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "write"), sink)))
    assert result.outcome == "succeeded"
    assert not target.exists()
    assert agent.log("permission-outcome")[0]["params"]["option"] == "no"
    assert sink.of("tool_result") == [("tool_result", "w1", "refused", "refused by the user")]


@pytest.mark.parametrize("fields", [{"read_only": True}, {"permission_mode": "read-only"}])
def test_read_only_rejects_without_asking(
    tmp_path: Path, root: Path, fields: dict[str, Any]
) -> None:
    target = root / "out.txt"
    agent = Agent(tmp_path, _write_script(target))
    sink = RecordingSink("allow_once")
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "write", **fields), sink)))
    assert result.outcome == "succeeded"
    assert sink.asked == []
    assert not target.exists()
    assert agent.log("permission-outcome")[0]["params"]["option"] == "no"
    assert sink.of("tool_result")[0][2] == "refused"


def test_auto_edit_allows_edits_but_asks_for_execute(tmp_path: Path, root: Path) -> None:
    target = root / "out.txt"
    script = _write_script(target)
    script["prompts"][0].append(
        {"ask": {"id": "x1", "title": "Run ls", "kind": "execute", "input": {"command": "ls"}}}
    )
    agent = Agent(tmp_path, script)
    sink = RecordingSink("reject")
    (result,) = run(
        _run_and_close(agent.provider(), (chat(root, "go", permission_mode="auto-edit"), sink))
    )
    assert target.read_text() == "x"
    assert [a.call_id for a in sink.asked] == ["x1"]
    assert [x["params"]["option"] for x in agent.log("permission-outcome")] == ["yes", "no"]
    assert result.ran_shell is False  # the command was refused


def test_root_chat_keeps_one_session_and_sends_only_the_new_message(
    tmp_path: Path, root: Path
) -> None:
    agent = Agent(tmp_path, {"prompts": [[{"say": "one"}], [{"say": "two"}]]})
    provider = agent.provider()
    first = chat(root, "first question", system="be brief")
    second = chat(root, "first question", "one", "second question", system="be brief")
    r1, r2 = run(_run_and_close(provider, (first, RecordingSink()), (second, RecordingSink())))
    assert r1.acp_session_id == r2.acp_session_id
    assert len(agent.log("session/new")) == 1
    prompts = [x["params"]["text"] for x in agent.log("session/prompt")]
    assert "be brief" in prompts[0] and prompts[0].endswith("first question")
    assert prompts[1] == "second question"
    assert provider.last_session is None  # the second turn reused the live session


def test_isolated_requests_open_fresh_sessions_and_return_no_id(tmp_path: Path, root: Path) -> None:
    agent = Agent(
        tmp_path,
        {"prompts": [[{"say": "chat"}], [{"say": "d1"}], [{"say": "d2"}], [{"say": "chat2"}]]},
    )
    provider = agent.provider()
    iso = dict(isolated=True, system="DIRECTIVE SYSTEM")
    results = run(
        _run_and_close(
            provider,
            (chat(root, "root question"), RecordingSink()),
            (chat(root, "directive A", **iso), RecordingSink()),
            (chat(root, "directive B", **iso), RecordingSink()),
            (chat(root, "root question", "chat", "root again"), RecordingSink()),
        )
    )
    assert [r.outcome for r in results] == ["succeeded"] * 4
    assert results[1].acp_session_id is None and results[2].acp_session_id is None
    assert results[0].acp_session_id == results[3].acp_session_id
    news = agent.log("session/new")
    assert len(news) == 3
    prompts = agent.log("session/prompt")
    sessions = [p["params"]["session_id"] for p in prompts]
    assert len(set(sessions)) == 3 and sessions[0] == sessions[3]
    assert "DIRECTIVE SYSTEM" in prompts[1]["params"]["text"]
    assert "root question" not in prompts[1]["params"]["text"] + prompts[2]["params"]["text"]
    # Isolated sessions are released in the agent; the root chat's is not.
    assert [c["params"]["session_id"] for c in agent.log("session/close")] == sessions[1:3]
    assert not agent.log("session/load") and not agent.log("session/resume")


@pytest.mark.parametrize(
    ("caps", "known", "how"),
    [
        ({"resume": True, "load": True}, ["s-old"], "resume"),
        ({"load": True}, ["s-old"], "load"),
        ({}, ["s-old"], "seeded"),
        ({"resume": True, "load": True}, [], "seeded"),
    ],
)
def test_root_chat_continues_an_earlier_session(
    tmp_path: Path, root: Path, caps: dict[str, bool], known: list[str], how: str
) -> None:
    agent = Agent(
        tmp_path, {"capabilities": caps, "known_sessions": known, "prompts": [[{"say": "ok"}]]}
    )
    provider = agent.provider(root_session_id="s-old")
    sink = RecordingSink()
    request = chat(root, "earlier question", "earlier answer", "next question")
    (result,) = run(_run_and_close(provider, (request, sink)))
    assert result.outcome == "succeeded"
    assert provider.last_session is not None and provider.last_session.how == how
    text = agent.log("session/prompt")[0]["params"]["text"]
    assert sink.streamed() == "ok"  # a load's history replay is not part of the turn
    if how == "seeded":
        assert result.acp_session_id != "s-old"
        assert (
            "earlier question" in text
            and "earlier answer" in text
            and text.endswith("next question")
        )
    else:
        assert result.acp_session_id == "s-old"
        assert text == "next question"
        assert len(agent.log("session/new")) == 0


def test_first_turn_is_new(tmp_path: Path, root: Path) -> None:
    agent = Agent(tmp_path, {"prompts": [[{"say": "ok"}]]})
    provider = agent.provider()
    run(_run_and_close(provider, (chat(root, "hello"), RecordingSink())))
    assert provider.last_session is not None and provider.last_session.how == "new"


def test_agent_death_mid_turn_fails_with_stderr_then_recovers(tmp_path: Path, root: Path) -> None:
    script = {
        "capabilities": {"resume": True},
        "prompts": [
            [{"say": "ok"}],
            [{"say": "about to"}, {"stderr": "boom: out of cheese"}, {"sleep": 0.2}, {"exit": 7}],
            [{"say": "back"}],
        ],
    }
    agent = Agent(tmp_path, script)
    provider = agent.provider()

    async def scenario() -> list[Any]:
        out = [await provider.run(chat(root, "one"), RecordingSink())]
        pid = provider.pid
        started = time.monotonic()
        out.append(await provider.run(chat(root, "one", "ok", "two"), RecordingSink()))
        out.append(time.monotonic() - started)
        out.append(
            await provider.run(chat(root, "one", "ok", "two", "?", "three"), RecordingSink())
        )
        out.append((pid, provider.pid))
        await provider.close()
        return out

    first, died, took, after, (pid1, pid2) = run(scenario())
    assert died.outcome == "failed"
    assert "exited (7)" in died.error and "boom: out of cheese" in died.error
    assert took < 5
    # A new process; the root conversation continues through session/resume.
    assert after.outcome == "succeeded" and pid1 != pid2
    assert after.acp_session_id == first.acp_session_id
    assert agent.log("session/resume")[0]["params"]["session_id"] == first.acp_session_id


@pytest.mark.parametrize("where", ["initialize", "new_session"])
def test_agent_death_during_startup_fails(tmp_path: Path, root: Path, where: str) -> None:
    agent = Agent(tmp_path, {"die_in": where})
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "hi"), RecordingSink())))
    assert result.outcome == "failed"
    assert "exited (3)" in result.error and f"dying in {where}" in result.error


def test_missing_command_fails_the_turn(root: Path) -> None:
    provider = AcpProvider("nope", ["/nonexistent/agent-binary"], {})
    (result,) = run(_run_and_close(provider, (chat(root, "hi"), RecordingSink())))
    assert result.outcome == "failed" and "cannot start ACP agent nope" in result.error


def test_protocol_mismatch_fails(tmp_path: Path, root: Path) -> None:
    agent = Agent(tmp_path, {"protocol_version": 7})
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "hi"), RecordingSink())))
    assert result.outcome == "failed" and "protocol 7" in result.error


def test_agent_error_and_stop_reasons(tmp_path: Path, root: Path) -> None:
    agent = Agent(
        tmp_path,
        {
            "prompts": [
                [{"error": "model exploded"}],
                [{"stop": "max_tokens"}],
                [{"stop": "cancelled"}],
            ]
        },
    )
    results = run(
        _run_and_close(
            agent.provider(),
            *[(chat(root, t), RecordingSink()) for t in ("a", "b", "c")],
        )
    )
    assert results[0].outcome == "failed" and "model exploded" in results[0].error
    assert results[1].outcome == "failed" and "max_tokens" in results[1].error
    assert results[2].outcome == "aborted"


def _cancel_scenario(agent: Agent, root: Path, how: str, sink: RecordingSink | None = None):
    provider = agent.provider()
    sink = sink or RecordingSink()

    async def scenario() -> Any:
        task = asyncio.create_task(provider.run(chat(root, "long job"), sink))
        await asyncio.wait_for(sink.got_text.wait(), 10)
        await asyncio.sleep(0.1)
        started = time.monotonic()
        if how == "task":
            task.cancel()
        else:
            await provider.cancel()
        result = await task
        took = time.monotonic() - started
        follow = await provider.run(chat(root, "long job", "x", "again"), RecordingSink())
        await provider.close()
        return result, took, follow

    return run(scenario())


@pytest.mark.parametrize("how", ["task", "method"])
def test_cancel_sends_session_cancel_and_aborts(tmp_path: Path, root: Path, how: str) -> None:
    agent = Agent(
        tmp_path,
        {
            "capabilities": {"resume": True},
            "prompts": [[{"say": "working"}, {"hang": True}], [{"say": "fine"}]],
        },
    )
    result, took, follow = _cancel_scenario(agent, root, how)
    assert result.outcome == "aborted" and took < 5
    (cancel,) = agent.log("session/cancel")
    # The cancelled conversation is closed and resumed fresh for the next turn.
    assert agent.log("session/close")[0]["params"] == cancel["params"]
    assert agent.log("session/resume")[0]["params"]["session_id"] == cancel["params"]["session_id"]
    assert follow.outcome == "succeeded"
    assert follow.acp_session_id == result.acp_session_id


def test_cancel_of_an_agent_that_ignores_it_still_ends(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(acp_module, "CANCEL_GRACE", 0.5)
    agent = Agent(
        tmp_path, {"prompts": [[{"say": "working"}, {"hang_forever": True}], [{"say": "fine"}]]}
    )
    result, took, _ = _cancel_scenario(agent, root, "task")
    assert result.outcome == "aborted" and took < 3


def test_cancel_withdraws_a_pending_permission_question(tmp_path: Path, root: Path) -> None:
    target = root / "out.txt"
    script = _write_script(target)
    script["prompts"].append([{"say": "fine"}])
    agent = Agent(tmp_path, script)
    never = asyncio.Event()

    async def wait_forever(_request: Any) -> str:
        await never.wait()
        return "allow_once"

    sink = RecordingSink(wait_forever)  # type: ignore[arg-type]
    result, _, follow = _cancel_scenario(agent, root, "method", sink)
    assert result.outcome == "aborted"
    assert agent.log("permission-outcome")[0]["params"]["outcome"] == "cancelled"
    assert not target.exists()
    assert follow.outcome == "succeeded"


def test_close_stops_the_agent_and_its_children(tmp_path: Path, root: Path) -> None:
    agent = Agent(tmp_path, {"prompts": [[{"spawn_child": 300}]]})
    provider = agent.provider()
    sink = RecordingSink()

    async def scenario() -> tuple[int, int]:
        await provider.run(chat(root, "spawn"), sink)
        pid = provider.pid
        assert pid is not None
        await provider.close()
        return pid, int(sink.streamed())

    pid, child = run(scenario())
    assert not pid_alive(pid) and not pid_alive(child)
    assert living_pgroup(pid) == []
    assert provider.pid is None


def test_agent_killed_by_signal_is_reported(tmp_path: Path, root: Path) -> None:
    agent = Agent(tmp_path, {"prompts": [[{"say": "working"}, {"hang_forever": True}]]})
    provider = agent.provider()
    sink = RecordingSink()

    async def scenario() -> Any:
        task = asyncio.create_task(provider.run(chat(root, "job"), sink))
        await asyncio.wait_for(sink.got_text.wait(), 10)
        assert provider.pid is not None
        os.kill(provider.pid, signal.SIGKILL)
        result = await asyncio.wait_for(task, 10)
        await provider.close()
        return result

    result = run(scenario())
    assert result.outcome == "failed" and "killed by signal 9" in result.error


def test_shell_and_outside_writes_are_reported(tmp_path: Path, root: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    script = {
        "prompts": [
            [
                {
                    "tool": {
                        "id": "e1",
                        "title": "Edit",
                        "kind": "edit",
                        "input": {"file_path": str(outside)},
                    }
                },
                {"update": {"id": "e1", "status": "completed", "output": "ok"}},
                {
                    "tool": {
                        "id": "e2",
                        "title": "Edit",
                        "kind": "edit",
                        "input": {"file_path": "inside.txt"},
                    }
                },
                {"update": {"id": "e2", "status": "completed", "output": "ok"}},
                {
                    "tool": {
                        "id": "x1",
                        "title": "Run",
                        "kind": "execute",
                        "input": {"command": "true"},
                    }
                },
                {"update": {"id": "x1", "status": "completed", "output": ""}},
                {
                    "tool": {
                        "id": "u1",
                        "title": "Unfinished",
                        "kind": "read",
                        "input": {"path": "a"},
                    }
                },
            ]
        ]
    }
    agent = Agent(tmp_path, script)
    sink = RecordingSink()
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "go"), sink)))
    assert result.ran_shell is True
    assert result.wrote_outside == [str(outside.resolve())]
    # A call the agent never finished gets a closing result in the journal.
    assert sink.of("tool_result")[-1] == (
        "tool_result",
        "u1",
        "failed",
        "no result: the turn ended first",
    )


def test_bad_input_is_refused(tmp_path: Path, root: Path) -> None:
    for command, env in (([], {}), ([""], {}), (["x"], {"A": 1})):
        with pytest.raises(TandemError) as err:
            AcpProvider("a", command, env)  # type: ignore[arg-type]
        assert err.value.code == "invalid"
    with pytest.raises(TandemError):
        AcpProvider(" ", ["x"], {})
    for bad_id in ("", "  ", 7):
        with pytest.raises(TandemError):
            AcpProvider("a", ["x"], {}, root_session_id=bad_id)  # type: ignore[arg-type]
        with pytest.raises(TandemError):
            AcpProvider("a", ["x"], {}).reset_root_session(bad_id)  # type: ignore[arg-type]
    config = AcpAgentConfig.model_validate({"command": ["x", "--acp"], "env": {"K": "v"}})
    assert AcpProvider.from_config("x", config).command == ["x", "--acp"]

    agent = Agent(tmp_path, {})
    provider = agent.provider()
    bad = [
        chat(Path("relative"), "hi"),
        chat(root / "missing", "hi"),
        TurnRequest(session_id="s", turn=1, root=root, messages=[]),
        TurnRequest(
            session_id="s", turn=1, root=root, messages=[Message(role="assistant", text="x")]
        ),
        TurnRequest(session_id="s", turn=1, root=root, messages=[Message(role="user", text="  ")]),
    ]
    for request in bad:
        with pytest.raises(TandemError) as err:
            run(provider.run(request, RecordingSink()))
        assert err.value.code == "invalid"
    assert provider.pid is None  # nothing was started for bad input

    run(provider.close())
    with pytest.raises(TandemError) as err:
        run(provider.run(chat(root, "hi"), RecordingSink()))
    assert err.value.code == "closed"


class BrokenSink(RecordingSink):
    """A sink whose journal fails on the second text delta."""

    def text(self, delta: str) -> None:
        if self.of("text"):
            raise OSError("disk full")
        super().text(delta)


def test_a_failing_sink_fails_the_turn_and_stops_the_agent(tmp_path: Path, root: Path) -> None:
    script = {"prompts": [[{"say": "one"}, {"say": "two"}, {"hang": True}]]}
    agent = Agent(tmp_path, script)
    sink = BrokenSink()
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "go"), sink)))
    assert result.outcome == "failed"
    assert "could not record the agent's output" in result.error and "disk full" in result.error
    assert len(agent.log("session/cancel")) == 1


def test_session_modes_follow_tandems_permission_mode(tmp_path: Path, root: Path) -> None:
    script = {
        "modes": {"current": "auto", "available": ["default", "plan", "auto"]},
        "prompts": [[{"say": "a"}], [{"say": "b"}], [{"say": "c"}], [{"say": "d"}]],
    }
    agent = Agent(tmp_path, script)
    results = run(
        _run_and_close(
            agent.provider(),
            (chat(root, "ask turn"), RecordingSink()),
            (chat(root, "discuss", read_only=True, isolated=True), RecordingSink()),
            (
                chat(root, "ask turn", "a", "read-only turn", permission_mode="read-only"),
                RecordingSink(),
            ),
            (chat(root, "ask turn", "a", "x", "c", "ask again"), RecordingSink()),
        )
    )
    assert [r.outcome for r in results] == ["succeeded"] * 4
    root_id = results[0].acp_session_id
    switches = [
        (m["params"]["session_id"] == root_id, m["params"]["mode_id"])
        for m in agent.log("session/set_mode")
    ]
    # An auto-approving default becomes the asking mode; read-only turns run in plan.
    assert switches == [(True, "default"), (False, "plan"), (True, "plan"), (True, "default")]


def test_close_during_a_turn_aborts_it(tmp_path: Path, root: Path) -> None:
    agent = Agent(tmp_path, {"prompts": [[{"say": "working"}, {"hang_forever": True}]]})
    provider = agent.provider()
    sink = RecordingSink()

    async def scenario() -> Any:
        task = asyncio.create_task(provider.run(chat(root, "job"), sink))
        await asyncio.wait_for(sink.got_text.wait(), 10)
        pid = provider.pid
        await provider.close()
        return await asyncio.wait_for(task, 10), pid

    result, pid = run(scenario())
    assert result.outcome == "aborted" and "session closed" in result.error
    assert pid is not None and not pid_alive(pid)


def test_tool_input_streamed_in_pieces_is_reported_complete(tmp_path: Path, root: Path) -> None:
    script = {
        "prompts": [
            [
                {"say": "two writes"},
                {"tool": {"id": "a", "title": "Preparing…", "kind": "edit", "input": {}}},
                {"tool": {"id": "b", "title": "Preparing…", "kind": "edit", "input": {}}},
                {"update": {"id": "a", "input": {"file_path": "a.txt"}}},
                {"update": {"id": "a", "input": {"file_path": "a.txt", "content": "A"}}},
                {"update": {"id": "b", "input": {"file_path": "b.txt", "content": "B"}}},
                {"update": {"id": "a", "status": "completed", "output": "ok a"}},
                {"update": {"id": "b", "status": "failed", "output": "no b"}},
                {"say": "done"},
            ]
        ]
    }
    agent = Agent(tmp_path, script)
    sink = RecordingSink()
    run(_run_and_close(agent.provider(), (chat(root, "go"), sink)))
    calls = {e[1]: e[5] for e in sink.of("tool_call")}
    assert calls == {
        "a": {"file_path": "a.txt", "content": "A"},
        "b": {"file_path": "b.txt", "content": "B"},
    }
    assert [e[1:3] for e in sink.of("tool_result")] == [("a", "completed"), ("b", "failed")]
    kinds = sink.kinds()
    assert kinds == [
        "text",
        "end_message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "text",
        "end_message",
    ]


def test_a_withdrawn_permission_question_answers_cancelled(tmp_path: Path, root: Path) -> None:
    target = root / "out.txt"
    agent = Agent(tmp_path, _write_script(target))

    async def withdrawn(_request: Any) -> str:
        raise asyncio.CancelledError  # what the turn engine's cancel does to the question

    sink = RecordingSink(withdrawn)  # type: ignore[arg-type]
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "write"), sink)))
    assert agent.log("permission-outcome")[0]["params"]["outcome"] == "cancelled"
    assert not target.exists()
    assert result.outcome == "succeeded"  # the agent went on; the engine decides the rest
