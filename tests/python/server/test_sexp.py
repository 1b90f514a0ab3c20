"""The S-expression codec: what Emacs prints we read; what we print Emacs reads."""

from __future__ import annotations

import subprocess

import pytest
from pydantic import BaseModel

from tandem.protocol import sexp
from tandem.protocol.sexp import Symbol


def test_plists_become_dicts_with_snake_case_keys() -> None:
    assert sexp.loads("(:files-changed 3 :ok t :none nil)") == {
        "files_changed": 3,
        "ok": True,
        "none": None,
    }


def test_dicts_become_plists_with_kebab_case_keys() -> None:
    assert sexp.dumps({"files_changed": [1, 2], "ok": True, "no": False}) == (
        "(:files-changed (1 2) :ok t :no nil)"
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain",
        'quote " and \\ backslash',
        "new\nline\ttab",
        "é ü 日本 🎉",
        "\x00\x1b\x7f",
        ";; not a comment ( [",
    ],
)
def test_strings_round_trip(text: str) -> None:
    assert sexp.loads(sexp.dumps(text)) == text


def test_numbers_symbols_vectors() -> None:
    assert sexp.loads("(1 -2 3. 1.5 -0.25 1e3 foo :kw [1 2])") == [
        1,
        -2,
        3,
        1.5,
        -0.25,
        1000.0,
        Symbol("foo"),
        Symbol(":kw"),
        [1, 2],
    ]
    assert isinstance(sexp.loads("foo"), Symbol)
    assert not isinstance(sexp.loads('"foo"'), Symbol)


def test_emacs_escapes_are_understood() -> None:
    assert sexp.loads(r'"\x41\ b\101\n\t"') == "Ab" + "A\n\t"
    assert sexp.loads('"line\\\ncontinued"') == "linecontinued"
    assert sexp.loads(r"foo\ bar") == Symbol("foo bar")
    assert sexp.loads("(a . b)") == [Symbol("a"), Symbol("b")]


def test_models_encode_as_plists() -> None:
    class M(BaseModel):
        some_field: int
        items: list[str]

    assert sexp.dumps(M(some_field=1, items=["a"])) == '(:some-field 1 :items ("a"))'


@pytest.mark.parametrize("bad", ["(", ")", "(a))", "'quoted", '"unterminated', "a b"])
def test_unreadable_text_is_an_error(bad: str) -> None:
    with pytest.raises(sexp.SexpError):
        sexp.loads(bad)


@pytest.mark.parametrize("bad", [object(), float("nan"), {1: "int key"}, {"s": {1, 2}}])
def test_unencodable_values_are_an_error(bad: object) -> None:
    with pytest.raises(sexp.SexpError):
        sexp.dumps(bad)


def test_emacs_reads_what_we_print(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Real Emacs reads our output back to the same value it prints."""
    value = {"text": 'é"\\\n\x1b\ttab 🎉', "n": [1, -2, 1.5], "flag": True, "none": None}
    src, dst = tmp_path / "in.el", tmp_path / "out.el"
    src.write_text(sexp.dumps(value), encoding="utf-8")
    subprocess.run(
        [
            "emacs",
            "-Q",
            "--batch",
            "--eval",
            f"""(let* ((coding-system-for-read 'utf-8) (coding-system-for-write 'utf-8)
                   (v (with-temp-buffer (insert-file-contents "{src}") (read (current-buffer)))))
              (with-temp-file "{dst}"
                (let ((print-escape-newlines nil)) (prin1 v (current-buffer)))))""",
        ],
        capture_output=True,
        check=True,
    )
    assert sexp.loads(dst.read_text(encoding="utf-8")) == value
