"""Remote path rules: absolute forms, joins, upload names, no '/'-prefixing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.remote import paths
from tandem.remote.paths import (
    build_upload_path,
    is_absolute,
    join_under,
    normalize_home,
    relative_parts,
    strip_trailing_separators,
)

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "path", ["/foo", "/", "C:\\x", "C:/x", "c:\\", "\\\\server\\share", "\\\\server\\share\\dir"]
)
def test_absolute_forms(path: str) -> None:
    assert is_absolute(path)


@pytest.mark.parametrize("path", ["", "foo", "workspace/project", "C:x", "C:", "\\\\server", "~/x"])
def test_not_absolute(path: str) -> None:
    assert not is_absolute(path)


@pytest.mark.parametrize(
    ("home", "stripped"),
    [
        ("/home/u/", "/home/u"),
        ("/home/u///", "/home/u"),
        ("/", "/"),
        ("C:\\Users\\me\\", "C:\\Users\\me"),
        ("C:\\", "C:\\"),
        ("C:/Users/me/", "C:/Users/me"),
        ("\\\\srv\\share\\", "\\\\srv\\share\\"),
        ("\\\\srv\\share\\home\\\\", "\\\\srv\\share\\home"),
    ],
)
def test_trailing_separators(home: str, stripped: str) -> None:
    assert strip_trailing_separators(home) == stripped


def test_normalize_home_refuses_bad_homes() -> None:
    for bad in ["", "   ", "relative/home", "/ho\x00me"]:
        with pytest.raises(TandemError):
            normalize_home(bad)
    assert normalize_home("/root/") == "/root"


@pytest.mark.parametrize(
    ("base", "rel", "joined"),
    [
        ("/home/u", "workspace/project/ab12", "/home/u/workspace/project/ab12"),
        ("/home/u/", "workspace//project/./x/", "/home/u/workspace/project/x"),
        ("/", "workspace/project", "/workspace/project"),
        ("C:\\Users\\me", "workspace/project", "C:\\Users\\me\\workspace\\project"),
        ("C:/Users/me", "workspace\\project", "C:/Users/me/workspace/project"),
        ("C:\\", "w", "C:\\w"),
        ("\\\\srv\\share", "w/p", "\\\\srv\\share\\w\\p"),
        ("/home/u", "", "/home/u"),
    ],
)
def test_join_under(base: str, rel: str, joined: str) -> None:
    assert join_under(base, relative_parts(rel)) == joined


@pytest.mark.parametrize("rel", ["..", "a/../b", "..\\x", "~/x", "C:x", "a\x00b", "/abs"])
def test_relative_parts_refuses(rel: str) -> None:
    with pytest.raises(TandemError):
        relative_parts(rel)


def test_join_under_needs_absolute_base() -> None:
    with pytest.raises(TandemError):
        join_under("home/u", ["x"])


@pytest.mark.parametrize(
    ("name", "wd", "dest"),
    [
        ("a.txt", "/home/u/w", "/home/u/w/a.txt"),
        ("/etc/passwd", "/home/u/w/", "/home/u/w/passwd"),
        ("../../evil.sh", "/home/u/w", "/home/u/w/evil.sh"),
        ("dir\\sub\\n.py", "C:\\w", "C:\\w\\n.py"),
        ("n.py", "C:/w", "C:/w/n.py"),
        ("n.py", "\\\\srv\\share\\w", "\\\\srv\\share\\w\\n.py"),
        ("..hidden", "/w", "/w/..hidden"),
    ],
)
def test_build_upload_path_basename_only(name: str, wd: str, dest: str) -> None:
    got = build_upload_path(name, wd)
    assert got == dest
    # Always a direct child of the working dir.
    assert got.startswith(strip_trailing_separators(wd))
    assert (
        got[len(strip_trailing_separators(wd)) :].lstrip("/\\")
        == dest.rsplit("\\" if "\\" in dest else "/", 1)[-1]
    )


@pytest.mark.parametrize("name", ["", ".", "..", "dir/", "dir/..", "dir\\.", "a\nb"])
def test_build_upload_path_refuses_names(name: str) -> None:
    with pytest.raises(TandemError) as err:
        build_upload_path(name, "/home/u/w")
    assert err.value.code == "invalid"


@pytest.mark.parametrize("wd", ["", "workspace/project", "C:x"])
def test_build_upload_path_needs_resolved_dir(wd: str) -> None:
    with pytest.raises(TandemError):
        build_upload_path("a.txt", wd)


# A remote path made absolute by gluing a separator in front of it, in any of
# the spellings Python or Emacs Lisp allow.
PREFIXING = [
    re.compile(r"""["']/["']\s*\+"""),  # "/" + x
    re.compile(r"""\bf["']/\{"""),  # f"/{x}"
    re.compile(r"""["']/(%s|\{\})["']\s*(%|\.format)"""),  # "/%s" % x, "/{}".format(x)
    re.compile(r"""["']/["']\.join\(\s*\[\s*["']{2}"""),  # "/".join(["", x])
    re.compile(r"""\(concat\s+"/"\s"""),  # (concat "/" x)
    re.compile(r"""\(format\s+"/%s"""),  # (format "/%s" x)
    re.compile(r"""lstrip\(["']/["']\)\s*$"""),
]


def _sources() -> list[Path]:
    files = sorted((REPO / "python" / "tandem" / "remote").glob("*.py"))
    elisp = REPO / "elisp" / "tandem-remote.el"
    if elisp.exists():
        files.append(elisp)
    return files


def test_no_code_path_prefixes_a_slash() -> None:
    files = _sources()
    assert Path(paths.__file__).resolve() in [f.resolve() for f in files]
    offenders = [
        f"{f.relative_to(REPO)}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if any(p.search(line) for p in PREFIXING)
    ]
    assert offenders == []


def test_the_grep_catches_prefixing() -> None:
    """The patterns above do find the forms they are meant to find."""
    samples = [
        'dest = "/" + working_dir',
        "dest = f'/{working_dir}/{name}'",
        'dest = "/%s" % wd',
        'dest = "/{}".format(wd)',
        'dest = "/".join(["", wd])',
        '(concat "/" dir)',
        '(format "/%s/%s" dir name)',
    ]
    for s in samples:
        assert any(p.search(s) for p in PREFIXING), s
    assert not any(p.search("base + sep + tail") for p in PREFIXING)
