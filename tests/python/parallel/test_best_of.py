"""Best-of-3: one request to three parallel sessions, three providers, three test outcomes.

Three fake OpenAI-wire servers with different scripts stand for three
providers (OpenAI itself and two test-only families on the same wire, each
with its own base-URL variable). ``parallel/best-of`` makes three worktrees
and sends the request to each with its provider, model and mode; after each
turn the user's test command runs in that tree: it passes in one, fails in
another and is killed at its timeout in the third. ``parallel/compare`` then
shows three patches, each answer and each test's outcome; the main tree is
untouched until a landing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI

from rewind.helpers import new_session, use, writes
from tandem.adapters.parallel import best_of, compare, land, run_test
from tandem.app import App
from tandem.protocol.parallel import (
    BestOfParams,
    GroupParams,
    LandParams,
    ParallelTestParams,
    RunSpec,
)
from tandem.providers import families

from .test_parallel import OLD, _git, repo

pytestmark = pytest.mark.anyio

__all__ = ["repo"]

TEST = ["sh", "-c", "grep -q good a.txt && echo passed && exit 0; "
                    "grep -q slow a.txt && sleep 30; echo failed; exit 3"]


@pytest.fixture
def two_more_families(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Families ``second`` and ``third``: OpenAI's wire, their own URL and key variables."""
    for name in ("second", "third"):
        families.register_family(replace(
            families.get("openai"), name=name, label=name, key_env=(f"{name.upper()}_KEY",),
            base_url_env=f"{name.upper()}_BASE_URL", default_base_url="https://x.invalid/v1",
            litellm_prefix=f"{name}-llm", example_model="m", settings=None,
            compatible_label=None))
        monkeypatch.setenv(f"{name.upper()}_KEY", "sk-test")
    try:
        yield
    finally:
        families.unregister_family("second")
        families.unregister_family("third")


async def test_best_of_three_shows_three_patches_and_three_test_outcomes(
        app: App, repo: Path, monkeypatch: pytest.MonkeyPatch, two_more_families: None
) -> None:
    good = OLD.replace("line 2\n", "line 2 good\n")
    bad = OLD.replace("line 2\n", "line 2 bad\n").replace("line 9\n", "")
    slow = OLD + "slow\n"
    with (FakeOpenAI(writes(("a.txt", good), text="I made it good")) as one,
          FakeOpenAI(writes(("a.txt", bad), ("extra.txt", "x\n"), text="Bad, sorry")) as two,
          FakeOpenAI(writes(("a.txt", slow), text="Slow one")) as three):
        use(one, monkeypatch)
        monkeypatch.setenv("SECOND_BASE_URL", two.base_url + "/v1")
        monkeypatch.setenv("THIRD_BASE_URL", three.base_url + "/v1")
        try:
            main = await new_session(app, repo)
            group = await best_of(app, BestOfParams(
                project=str(repo), text="improve line 2", parent_session=main, name="try",
                runs=[RunSpec(provider="openai:gpt-a"),
                      RunSpec(provider="second:model-b", permission_mode="auto-edit"),
                      RunSpec(provider="third:model-c")],
                test_command=TEST, test_timeout=2))
            assert [r.name for r in group.runs] == ["try-1", "try-2", "try-3"]
            await app.parallel.settled()
            shown = await compare(app, GroupParams(group=group.group))
        finally:
            await app.turns.aclose()
        # Each provider got the request, with its own model.
        assert [r.body["model"] for r in one.api_requests("/v1/chat/completions")][0] == "gpt-a"
        assert two.api_requests("/v1/chat/completions")[0].body["model"] == "model-b"
        assert three.api_requests("/v1/chat/completions")[0].body["model"] == "model-c"
    r1, r2, r3 = shown.runs
    assert [r.outcome for r in shown.runs] == ["succeeded"] * 3
    assert [r.state for r in shown.runs] == ["ended"] * 3
    assert [r.provider for r in shown.runs] == ["openai:gpt-a", "second:model-b",
                                                "third:model-c"]
    assert [r.answer.split("\n")[0] for r in shown.runs] == [
        "I made it good", "Bad, sorry", "Slow one"]
    # Three patches: each tree's change against its base.
    assert (r1.files, r1.additions, r1.deletions) == (1, 1, 1)
    assert (r2.files, r2.additions, r2.deletions) == (2, 2, 2)
    assert (r3.files, r3.additions, r3.deletions) == (1, 1, 0)
    assert (Path(r2.worktree) / "extra.txt").read_text() == "x\n"
    # Three test outcomes: passed, failed with its status, killed at the timeout.
    assert r1.test and r1.test.exit_status == 0 and "passed" in r1.test.output
    assert r2.test and r2.test.exit_status == 3 and "failed" in r2.test.output
    assert r3.test and r3.test.timed_out and r3.test.exit_status is None
    assert "killed after 2 s" in Path(r3.test.log).read_text()
    assert r3.test.seconds < 10
    assert (repo / "a.txt").read_text() == OLD  # nothing landed yet
    # Landing the winner is the existing landing.
    done = await land(app, LandParams(session=r1.session))
    assert done.outcome == "succeeded" and done.written == ["a.txt"]
    assert (repo / "a.txt").read_text() == good
    assert "tandem/try-2" in _git(repo, "branch", "--list", "tandem/*")
    await app.turns.aclose()


async def test_a_test_runs_without_secrets_and_keeps_its_output_bounded(
        app: App, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_parallel import _make

    p = await _make(app, repo, "T")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-seen")
    result = await run_test(app, ParallelTestParams(
        session=p, command=["sh", "-c", "pwd; echo key=${OPENAI_API_KEY:-none}; "
                                        "head -c 40000 /dev/zero | tr '\\0' x; exit 5"]))
    assert result.exit_status == 5 and not result.timed_out
    log = Path(result.log).read_text()
    assert log.startswith(os.path.realpath(app.parallel.record(p).worktree) + "\n")
    assert "key=none" in log and "sk-never-seen" not in log
    assert result.truncated and len(result.output) == 16_000 and len(log) > 40_000
    missing = await run_test(app, ParallelTestParams(session=p, command=["/no/such/program"]))
    assert missing.exit_status == 127 and "cannot run" in missing.output
