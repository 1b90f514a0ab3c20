"""Attacks on a parallel tree made on a host: hostile names, and a server that lies.

The names are refused before anything is sent; the path is tandem's own
(``ROOT.tandem-worktrees/NAME``); an answer that names another path, branch
or commit refuses the creation and removes what was made, by tandem's path.
"""

from __future__ import annotations

import shlex

import pytest
from pydantic import ValidationError

from tandem.parallel import host_trees
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import CreateParams

pytestmark = pytest.mark.anyio

HOSTILE = ["a/b", "/abs", "..", "../x", "a/../b", "-rf", "--force", "-b", "a;touch PWNED",
           "$(touch PWNED)", "`id`", "a b", "a|b", "a&b", "a\nb", "a'b", 'a"b', "a..b",
           "x.lock", "x.", ".hidden", "", "~x", "a*", "a\\b", "é"]
SHA = "a" * 40
ROOT = "/home/u/workspace/proj"


class Stub:
    """A host shell that answers each call from ANSWERS and notes the commands."""

    def __init__(self, *answers: tuple[int, str]) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str]] = []

    async def execute_bash(self, command: str, cwd: str, timeout: int = 120) -> tuple[int, str]:
        self.calls.append((command, cwd))
        return self.answers.pop(0) if self.answers else (0, "")


@pytest.mark.parametrize("name", HOSTILE)
async def test_a_hostile_name_is_refused_before_anything_is_sent(name: str) -> None:
    shell = Stub()
    with pytest.raises(TandemError) as e:
        await host_trees.make(shell, ROOT, name, "box")
    assert e.value.code == "invalid"
    assert shell.calls == []
    with pytest.raises(TandemError):
        host_trees.tree_path(ROOT, name)


@pytest.mark.parametrize("name", [n for n in HOSTILE if n not in ("a..b", "x.lock", "x.")])
def test_the_protocol_refuses_them_too(name: str) -> None:
    with pytest.raises(ValidationError):
        CreateParams(project="/p", name=name)


@pytest.mark.parametrize("root", ["relative/p", "C:\\p", "/", "/a/../b", "/a/./b", "/a\nb",
                                  "\\\\srv\\share\\p"])
async def test_a_root_tandem_cannot_name_is_refused(root: str) -> None:
    shell = Stub()
    with pytest.raises(TandemError):
        await host_trees.make(shell, root, "A", "box")
    assert shell.calls == []


def test_the_path_is_computed_beside_the_root() -> None:
    assert host_trees.tree_path(ROOT + "/", "A-1.x") == ROOT + ".tandem-worktrees/A-1.x"


async def test_every_argument_of_the_scripts_is_quoted() -> None:
    root = "/home/u/my proj;$(touch PWNED)"
    shell = Stub((0, f"TANDEM-KIND worktree\nTANDEM-BASE {SHA}\n"),
                 (0, f"TANDEM-PWD {root}.tandem-worktrees/A\nTANDEM-TOP {root}.tandem-worktrees"
                     f"/A\nTANDEM-REF refs/heads/tandem/A\nTANDEM-HEAD {SHA}\n"))
    made = await host_trees.make(shell, root, "A", "box")
    assert made.path == f"{root}.tandem-worktrees/A" and made.branch == "tandem/A"
    script, cwd = shell.calls[0]
    assert cwd == root
    assert f"root={shlex.quote(root)}" in script
    assert "$(touch PWNED)" not in script.replace(shlex.quote(root), "").replace(
        shlex.quote(made.path), "")
    assert "core.hooksPath=/dev/null" in script


LIES = [
    ("PWD", "/etc", "is '/etc'"),
    ("PWD", "", "is 'not there'"),
    ("TOP", "/home/u/other", "is the work tree"),
    ("REF", "refs/heads/main", "is on 'refs/heads/main'"),
    ("HEAD", "b" * 40, "is at commit"),
]


@pytest.mark.parametrize(("field", "value", "said"), LIES)
async def test_an_answer_naming_another_tree_is_refused_and_cleaned_by_tandems_path(
        field: str, value: str, said: str) -> None:
    dest = ROOT + ".tandem-worktrees/A"
    answer = {"PWD": dest, "TOP": dest, "REF": "refs/heads/tandem/A", "HEAD": SHA}
    answer[field] = value
    shell = Stub((0, f"TANDEM-KIND worktree\nTANDEM-BASE {SHA}\n"),
                 (0, "".join(f"TANDEM-{k} {v}\n" for k, v in answer.items())),
                 (0, "TANDEM-REMOVED\n"))
    with pytest.raises(TandemError, match=said) as e:
        await host_trees.make(shell, ROOT, "A", "box")
    assert e.value.code == "remote-invalid"
    cleanup, cwd = shell.calls[2]
    assert cwd == ROOT
    assert f"dest={shlex.quote(dest)}" in cleanup and "branch=tandem/A" in cleanup
    if value.startswith("/"):
        assert value not in cleanup  # never the path the server named


async def test_a_base_commit_that_is_no_commit_id_is_refused() -> None:
    dest = ROOT + ".tandem-worktrees/A"
    shell = Stub((0, "TANDEM-KIND worktree\nTANDEM-BASE ;rm -rf ~\n"),
                 (0, f"TANDEM-PWD {dest}\nTANDEM-TOP {dest}\nTANDEM-REF refs/heads/tandem/A\n"
                     "TANDEM-HEAD ;rm -rf ~\n"))
    with pytest.raises(TandemError, match="is at commit"):
        await host_trees.make(shell, ROOT, "A", "box")


async def test_an_existing_folder_is_refused_and_nothing_removed() -> None:
    shell = Stub((0, "TANDEM-EXISTS\n"))
    with pytest.raises(TandemError) as e:
        await host_trees.make(shell, ROOT, "A", "box")
    assert e.value.code == "exists" and len(shell.calls) == 1


@pytest.mark.parametrize(("path", "branch"), [
    ("/etc", "tandem/A"), (ROOT, "tandem/A"), (ROOT + ".tandem-worktrees/B", "tandem/A"),
    (ROOT + ".tandem-worktrees/A", "main"), (ROOT + ".tandem-worktrees/A", "tandem/B")])
async def test_removal_touches_only_what_the_name_makes(path: str, branch: str) -> None:
    shell = Stub()
    with pytest.raises(TandemError, match="not"):
        await host_trees.remove(shell, ROOT, "A", path, "worktree", branch, "box")
    assert shell.calls == []
