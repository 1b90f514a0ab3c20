"""The fake servers themselves: routes, script rules, standalone mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.openai_server import FakeOpenAI
from fakes.script import Match, Reply, Script, Step, ToolCallSpec

FAKES = Path(__file__).resolve().parents[2] / "fakes"


def test_anthropic_side_routes() -> None:
    with FakeAnthropic([]) as fake:
        base = fake.base_url
        assert httpx.head(base + "/").status_code == 200
        count = httpx.post(
            base + "/v1/messages/count_tokens?beta=true",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert count.status_code == 200 and count.json()["input_tokens"] > 0
        assert httpx.get(base + "/v1/models").json()["data"][0]["type"] == "model"
        bad = httpx.post(base + "/v1/messages", json={"model": "m"})
        assert bad.status_code == 400
        assert bad.json()["error"]["type"] == "invalid_request_error"
        assert httpx.post(base + "/v1/nothing", json={}).status_code == 404


def test_anthropic_non_streaming_and_script_rules() -> None:
    script = Script(
        [
            Step(
                match=Match(has_tools=True),
                reply=Reply(
                    text="main", tool_calls=[ToolCallSpec(name="Write", input={"file_path": "/x"})]
                ),
            )
        ],
        default=Reply(text="a title"),
    )
    with FakeAnthropic(script) as fake:
        url = fake.base_url + "/v1/messages?beta=true"
        msgs = [{"role": "user", "content": "hi"}]
        title = httpx.post(url, json={"model": "m", "messages": msgs, "unknown_field": 1})
        assert title.json()["content"] == [{"type": "text", "text": "a title"}]
        main = httpx.post(url, json={"model": "m", "messages": msgs, "tools": [{"name": "W"}]})
        body = main.json()
        assert body["stop_reason"] == "tool_use"
        assert body["content"][1]["type"] == "tool_use"
        assert body["content"][1]["input"] == {"file_path": "/x"}
        assert script.remaining() == 0
        assert fake.requests[0]["query"] == {"beta": "true"}


def test_callable_script_sees_the_request() -> None:
    def answer(body: dict) -> Reply | None:
        last = body["messages"][-1]["content"]
        return Reply(text=f"echo {last}") if last != "skip" else None

    with FakeOpenAI(Script.of(answer, default=Reply(text="default"))) as fake:
        url = fake.base_url + "/v1/chat/completions"
        one = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
        assert one.json()["choices"][0]["message"]["content"] == "echo x"
        two = httpx.post(
            url, json={"model": "m", "messages": [{"role": "user", "content": "skip"}]}
        )
        assert two.json()["choices"][0]["message"]["content"] == "default"


def test_exhausted_script_is_a_500() -> None:
    with FakeOpenAI([]) as fake:
        r = httpx.post(fake.base_url + "/v1/chat/completions", json={"model": "m", "messages": []})
        assert r.status_code == 500 and "script exhausted" in r.json()["error"]["message"]


def test_bad_script_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"status": 302}]))
    with pytest.raises(ValueError, match="status"):
        Script.from_file(path)
    path.write_text(json.dumps({"steps": [{"reply": {"txt": "typo"}}]}))
    with pytest.raises(ValueError, match="txt"):
        Script.from_file(path)


@pytest.mark.parametrize("server", ["anthropic_server.py", "openai_server.py"])
def test_standalone_prints_port_and_records(server: str, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"text": "standalone"}}))
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(FAKES / server),
            "--port",
            "0",
            "--script",
            str(script),
            "--record",
            str(record),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        path = "/v1/messages" if server.startswith("anthropic") else "/v1/chat/completions"
        with httpx.stream(
            "POST",
            f"http://127.0.0.1:{port}{path}",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
        ) as r:
            body = "".join(r.iter_text())
        assert r.headers["content-type"].startswith("text/event-stream")
        assert "standalone"[:6] in body
        seen = httpx.get(f"http://127.0.0.1:{port}/_fake/requests").json()
        assert [s["path"] for s in seen] == [path]
        assert json.loads(record.read_text().splitlines()[0])["body"]["model"] == "m"
    finally:
        proc.terminate()
        assert proc.wait(5) == 0
