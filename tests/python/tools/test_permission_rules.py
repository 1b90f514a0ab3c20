"""Permission rules the user keeps: validation, matching (with the shell attacks a prefix
must not let through), the executor deciding by a rule and naming it, the rule methods,
and a project's settings file never supplying a rule, trusted or not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tandem.adapters import permissions as methods
from tandem.config.layers import read_layer, resolve, user_settings_path
from tandem.config.rules import PermissionRule, match, prefix_matches, proposal
from tandem.config.shown import project_digest
from tandem.config.trust import TrustStore, canonical_root
from tandem.protocol.base import TandemError
from tandem.protocol.permissions import NoParams, RuleParams
from tandem.providers.base import Message, PermissionRequest, TurnRequest
from tandem.tools.base import ToolContext
from tandem.tools.executor import ToolExecutor
from tandem.tools.permissions import SessionGrants, user_rules


def _shell(prefix: str, scope: str | None = None, decision: str = "allow") -> PermissionRule:
    return PermissionRule(tool="shell", pattern=prefix, scope=scope,
                          decision=decision)  # type: ignore[arg-type]


# -- matching ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["git status", "git status -s", "git  status   --short",
                                     "git 'status'", "git status -- src/a.py"])
def test_a_prefix_allows_the_command_and_more_words(command: str) -> None:
    assert prefix_matches("git status", command)


@pytest.mark.parametrize("attack", [
    "git statusfoo", "git stat", "git", "gitstatus", "git status; rm -rf /",
    "git status;rm -rf /", "git status && rm -rf /", "git status || rm -rf /",
    "git status | sh", "git status `rm -rf /`", "git status $(rm -rf /)",
    "git status\nrm -rf /", "git status\rrm -rf /", "git status & rm -rf /",
    "git status > ~/.bashrc", "git status < /etc/passwd", "git status $HOME",
    "git status \\; rm", "(git status)", "git status {a,b}", "git status 'unclosed",
    "  ", "", "rm -rf / git status", "FOO=1 git status",
])
def test_a_prefix_never_allows_a_compound_or_longer_word(attack: str) -> None:
    assert not prefix_matches("git status", attack)
    assert match([_shell("git status")], "shell", {"command": attack}, "/p") is None


def test_globs_match_paths_under_the_root_only() -> None:
    rule = PermissionRule(tool="write_file", pattern="src/*.py")
    for path, hit in [("src/a.py", True), ("src/deep/b.py", True), ("./src/a.py", True),
                      ("src/a.txt", False), ("../src/a.py", False), ("src/../../x.py", False),
                      ("/abs/src/a.py", False), ("other/src/a.py", False)]:
        assert (match([rule], "write_file", {"path": path}, "/p") is rule) is hit, path
    assert match([rule], "edit_file", {"path": "src/a.py"}, "/p") is None  # another tool


def test_scope_is_one_project_root_or_everywhere(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (tmp_path / "link").symlink_to(a)
    rule = _shell("make", scope=str(a))
    assert match([rule], "shell", {"command": "make test"}, str(a)) is rule
    assert match([rule], "shell", {"command": "make test"}, str(tmp_path / "link")) is rule
    assert match([rule], "shell", {"command": "make test"}, str(b)) is None
    everywhere = _shell("make")
    assert match([everywhere], "shell", {"command": "make"}, str(b)) is everywhere
    assert rule.describe() == f"rule: shell make ({a})"
    assert everywhere.describe() == "rule: shell make (everywhere)"


def test_a_deny_wins_over_an_allow() -> None:
    allow, deny = _shell("git"), _shell("git push", decision="deny")
    assert match([allow, deny], "shell", {"command": "git push origin"}, "/p") is deny
    assert match([allow, deny], "shell", {"command": "git log"}, "/p") is allow
    assert deny.describe() == "rule: deny shell git push (everywhere)"


@pytest.mark.parametrize(("rule", "why"), [
    ({"tool": "shell", "pattern": ""}, "at least 1 character"),
    ({"tool": "shell", "pattern": "   "}, "empty"),
    ({"tool": "shell", "pattern": "git status; rm"}, "may not hold ;"),
    ({"tool": "shell", "pattern": "git\nstatus"}, "control character"),
    ({"tool": "shell", "pattern": "echo 'x"}, "does not parse"),
    ({"tool": "rm_everything", "pattern": "x"}, "unknown tool 'rm_everything'"),
    ({"tool": "read_file", "pattern": "x"}, "unknown tool"),
    ({"tool": "write_file", "pattern": "/etc/*"}, "relative to the project root"),
    ({"tool": "write_file", "pattern": "../*"}, ".. component"),
    ({"tool": "write_file", "pattern": "src/[ab.py"}, "unclosed ["),
    ({"tool": "shell", "pattern": "make", "scope": "relative/dir"}, "absolute project root"),
    ({"tool": "shell", "pattern": "make", "decision": "maybe"}, "allow"),
    ({"tool": "shell", "pattern": "make", "extra": 1}, "Extra inputs"),
])
def test_every_bad_rule_is_refused_with_a_clear_error(rule: dict[str, Any], why: str) -> None:
    with pytest.raises(ValidationError, match=None) as err:
        PermissionRule.model_validate(rule)
    assert why in str(err.value), str(err.value)


def test_the_question_proposes_a_pattern() -> None:
    assert proposal("shell", {"command": "git status -s"}) == "git status"
    assert proposal("shell", {"command": "ls"}) == "ls"
    assert proposal("shell", {"command": "ls; rm -rf /"}) is None
    assert proposal("write_file", {"path": "src/a.py"}) == "src/a.py"
    assert proposal("read_file", {"path": "a"}) is None


# -- the executor --------------------------------------------------------------------


class Sink:
    """A TurnSink that records calls and questions and answers each with ANSWER."""

    def __init__(self, answer: str = "reject") -> None:
        self.answer = answer
        self.asked: list[PermissionRequest] = []
        self.decided: list[str | None] = []

    def tool_call(self, call_id: str, name: str, kind: str, title: str, input: Any,
                  decided_by: str | None = None) -> None:
        self.decided.append(decided_by)

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        pass

    async def ask_permission(self, request: PermissionRequest) -> str:
        self.asked.append(request)
        return self.answer


def _executor(root: Path, rules: list[PermissionRule], mode: str = "ask",
              read_only: bool = False) -> tuple[ToolExecutor, Sink]:
    sink = Sink()
    req = TurnRequest(session_id="s", turn=1, root=root, model="m", read_only=read_only,
                      messages=[Message(role="user", text="x")],
                      permission_mode=mode)  # type: ignore[arg-type]
    ctx = ToolContext(root=root, protected_paths=req.protected_paths)
    return ToolExecutor(req, sink, ctx, grants=SessionGrants(),  # type: ignore[arg-type]
                        rules=lambda: rules), sink


@pytest.mark.anyio
async def test_an_allow_rule_runs_without_asking_and_names_itself(tmp_path: Path) -> None:
    executor, sink = _executor(tmp_path, [_shell("echo hi")])
    out = await executor.run("c1", "shell", {"command": "echo hi there"})
    assert out.status == "completed" and "hi there" in out.output
    assert sink.asked == [] and sink.decided == ["rule: shell echo hi (everywhere)"]
    out = await executor.run("c2", "shell", {"command": "echo hi; echo owned"})
    assert out.status == "refused" and len(sink.asked) == 1 and sink.decided[-1] is None


@pytest.mark.anyio
async def test_a_deny_rule_refuses_in_auto_edit_and_a_rule_never_beats_read_only(
        tmp_path: Path) -> None:
    deny = PermissionRule(tool="write_file", pattern="*.lock", decision="deny")
    executor, sink = _executor(tmp_path, [deny], mode="auto-edit")
    out = await executor.run("c1", "write_file", {"path": "a.lock", "content": "x"})
    assert out.status == "refused" and "rule: deny write_file *.lock" in out.output
    assert not (tmp_path / "a.lock").exists() and sink.asked == []
    allow = PermissionRule(tool="write_file", pattern="*")
    executor, sink = _executor(tmp_path, [allow], mode="read-only")
    out = await executor.run("c1", "write_file", {"path": "a.txt", "content": "x"})
    assert out.status == "refused" and not (tmp_path / "a.txt").exists()


@pytest.mark.anyio
async def test_a_rule_does_not_cover_a_protected_path(tmp_path: Path) -> None:
    executor, sink = _executor(tmp_path, [PermissionRule(tool="write_file", pattern="*")])
    out = await executor.run("c1", "write_file", {"path": ".envrc", "content": "x"})
    assert out.status == "refused" and len(sink.asked) == 1
    assert not (tmp_path / ".envrc").exists()


# -- where rules come from -----------------------------------------------------------


RULES = [{"tool": "shell", "pattern": "rm -rf"}]


def _project(tmp_path: Path, user: dict[str, Any]) -> tuple[Path, Path]:
    user_file = user_settings_path()
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text(json.dumps(user))
    root = tmp_path / "proj"
    (root / ".tandem").mkdir(parents=True)
    (root / ".tandem" / "settings.json").write_text(json.dumps({"permission_rules": RULES}))
    return root, user_file


def test_a_projects_rules_are_ignored_untrusted_and_trusted(tmp_path: Path) -> None:
    root, user_file = _project(tmp_path, {})
    home = tmp_path / "home"
    got = resolve(root, home, user_file)
    assert got.settings.permission_rules is None
    assert any("permission_rules" in w for w in got.warnings), got.warnings
    canon = canonical_root(root)
    project = read_layer(root / ".tandem" / "settings.json")
    covered = project_digest(canon, project.sha256, {})
    assert covered is not None
    TrustStore(home).grant(canon, covered)
    trusted = resolve(root, home, user_file)
    assert trusted.trusted and trusted.settings.permission_rules is None
    assert "permission_rules" in " ".join(trusted.ignored)
    assert "trusted or not" in trusted.warnings[0], trusted.warnings
    assert user_rules() == []  # the executor reads the user's file alone


def test_the_executor_reads_the_users_rules(tmp_path: Path) -> None:
    _project(tmp_path, {"permission_rules": [{"tool": "shell", "pattern": "git status"}]})
    assert [r.describe() for r in user_rules()] == ["rule: shell git status (everywhere)"]


def test_a_bad_rule_in_the_users_file_is_refused_by_the_settings_model(tmp_path: Path) -> None:
    _project(tmp_path, {"permission_rules": [{"tool": "shell", "pattern": "a;b"}]})
    with pytest.raises(TandemError, match=r"permission_rules\.0.*may not hold ;"):
        read_layer(user_settings_path()).typed()
    assert user_rules() == []


# -- the methods ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_add_list_remove_through_the_users_settings_file() -> None:
    app: Any = None
    added = await methods.add_rule(app, RuleParams(tool="shell", pattern="git status"))
    assert added.changed and added.rules[0].description == "rule: shell git status (everywhere)"
    again = await methods.add_rule(app, RuleParams(tool="shell", pattern="git status"))
    assert not again.changed and len(again.rules) == 1
    await methods.add_rule(app, RuleParams(tool="write_file", pattern="src/*", scope="/p",
                                           decision="deny"))
    listed = await methods.list_rules(app, NoParams())
    assert [r.pattern for r in listed.rules] == ["git status", "src/*"]
    saved = json.loads(user_settings_path().read_text())
    assert saved["permission_rules"][1] == {"tool": "write_file", "pattern": "src/*",
                                            "scope": "/p", "decision": "deny"}
    gone = await methods.remove_rule(app, RuleParams(tool="shell", pattern="git status"))
    assert [r.pattern for r in gone.rules] == ["src/*"]
    with pytest.raises(TandemError, match="No such permission rule"):
        await methods.remove_rule(app, RuleParams(tool="shell", pattern="git status"))
    with pytest.raises(TandemError, match="unknown tool 'nope'"):
        await methods.add_rule(app, RuleParams(tool="nope", pattern="x"))
    await methods.remove_rule(app, RuleParams(tool="write_file", pattern="src/*", scope="/p",
                                              decision="deny"))
    assert "permission_rules" not in json.loads(user_settings_path().read_text())
