"""Secrets in memory only: never in a tandem process's initial environment, never in a child's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.epc_peer import Peer
from tandem import secrets

REPO = Path(__file__).resolve().parents[3]


def _environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def test_serve_started_from_a_shell_with_token_and_keys_holds_them_in_memory_only(
    tmp_path: Path,
) -> None:
    env = dict(os.environ, TANDEM_HOME=str(tmp_path), TANDEM_TOKEN="tok-canary-1",
               OPENAI_API_KEY="sk-canary-2", GITHUB_TOKEN="gh-canary-3")
    proc = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve"], env=env, cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        environ = _environ(proc.pid)
        for secret in (b"tok-canary-1", b"sk-canary-2", b"gh-canary-3"):
            assert secret not in environ
        assert f"TANDEM_HOME={tmp_path}".encode() in environ.split(b"\0")
        # The token was kept (in memory): hello with it succeeds.
        peer = Peer(port)
        peer.call("hello", {"token": "tok-canary-1"})
        assert peer.recv()[0] == "return"
        peer.close()
    finally:
        proc.terminate()
        proc.wait(10)


BOOT = (
    "from tandem import secrets; secrets.bootstrap(); import os, json;"
    " print(json.dumps({'environ': open('/proc/self/environ').read(),"
    " 'key': secrets.get('X_API_KEY'), 'os': os.environ.get('X_API_KEY'),"
    " 'argv': __import__('sys').argv[1:]}))"
)


def test_bootstrap_re_executes_once_with_the_secrets_on_a_pipe() -> None:
    env = dict(os.environ, X_API_KEY="sk-canary-4", PLAIN="kept")
    out = subprocess.run([sys.executable, "-c", BOOT, "arg one", "--two"], env=env,
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["key"] == "sk-canary-4" and seen["os"] is None
    assert "sk-canary-4" not in seen["environ"] and "PLAIN=kept" in seen["environ"]
    assert seen["argv"] == ["arg one", "--two"]


def test_bootstrap_without_secrets_does_not_re_execute() -> None:
    env = {k: v for k, v in os.environ.items() if not secrets.is_secret_name(k)}
    code = ("import os; pid = os.getpid(); from tandem import secrets; secrets.bootstrap();"
            " import sys; print(pid == os.getpid(), 'TANDEM_SECRETS_FD' in os.environ)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60, cwd=REPO)
    assert out.stdout.split() == ["True", "False"]


def test_secret_names_and_child_environment() -> None:
    for name in ("OPENAI_API_KEY", "anthropic_api_key", "TANDEM_TOKEN", "GITHUB_TOKEN",
                 "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "X_SECRET"):
        assert secrets.is_secret_name(name), name
    for name in ("PATH", "HOME", "TANDEM_HOME", "OPENAI_BASE_URL", "SSH_AUTH_SOCK"):
        assert not secrets.is_secret_name(name), name
    base = {"PATH": "/bin", "OPENAI_API_KEY": "k", "TANDEM_TOKEN": "t",
            "TANDEM_SECRETS_FD": "3", "TANDEM_HOME": "/h"}
    assert secrets.child_env(base) == {"PATH": "/bin", "TANDEM_HOME": "/h"}


@pytest.mark.parametrize("line", [b"", b"[]\n", b'{"token": 1}\n', b"{bad\n",
                                  b'{"token": "t", "secrets": []}\n'])
def test_a_bad_handover_line_is_refused(line: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_store", {})
    assert not secrets.accept_handover(line)
    assert secrets.get(secrets.TOKEN) is None


def test_the_handover_keeps_token_and_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_store", {})
    assert secrets.accept_handover(b'{"token": "t1", "secrets": {"OPENAI_API_KEY": "sk"}}\n')
    assert secrets.get(secrets.TOKEN) == "t1"
    assert secrets.lookup_env()["OPENAI_API_KEY"] == "sk"


def test_credentials_read_keys_from_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.providers.credentials import resolve_credentials

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(secrets, "_store", {"ANTHROPIC_API_KEY": "sk-mem"})
    assert resolve_credentials("anthropic").key() == "sk-mem"
