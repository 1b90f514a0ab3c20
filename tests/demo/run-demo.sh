#!/usr/bin/env bash
# `make demo`: Emacs (-nw) running tandem against the scripted fake
# OpenAI-compatible server of the test suite. No API key; the answers are
# canned (tests/demo/demo_script.json). State lives in a temporary
# directory that is removed on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
EMACS=${EMACS:-emacs}
STATE=$(mktemp -d "${TMPDIR:-/tmp}/tandem-demo.XXXXXX")
mkdir -p "$STATE/project" "$STATE/home" "$STATE/config"
printf 'print("hello")\n' > "$STATE/project/main.py"

"$PY" "$ROOT/tests/fakes/openai_server.py" --port 0 \
  --script "$ROOT/tests/demo/demo_script.json" > "$STATE/port" 2> "$STATE/fake.log" &
FAKE=$!
trap 'kill "$FAKE" 2>/dev/null || true; rm -rf "$STATE"' EXIT
for _ in $(seq 100); do [ -s "$STATE/port" ] && break; sleep 0.1; done
PORT=$(head -n1 "$STATE/port")
[ -n "$PORT" ] || { echo "demo: the fake model server did not start:"; cat "$STATE/fake.log"; exit 1; }

TANDEM_HOME="$STATE/home" XDG_CONFIG_HOME="$STATE/config" \
OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY= \
  "$EMACS" -nw -Q -L "$ROOT/elisp" -l "$ROOT/tests/demo/demo.el" \
  --eval "(tandem-demo-start \"$STATE/project\")"
