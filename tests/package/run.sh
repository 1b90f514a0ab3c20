#!/usr/bin/env bash
# Install tandem as a user would, from a clean clone of HEAD.
#
#   1. git clone this repository's HEAD into a temporary directory;
#   2. Emacs >= 29: package-vc-install the clone; Emacs 28: `make package'
#      in the clone and package-install-file the tarball -- into a fresh
#      package-user-dir, with no package archives;
#   3. M-x tandem-install-backend into a fresh venv (pip may use the
#      package index for the dependencies);
#   4. a chat turn against the fake OpenAI server, run by that venv's Python.
# tests/package/install-test.el (from the clone) does 2-4 and asserts that
# the backend runs from the new venv, nothing from this checkout.
# TANDEM_PACKAGE_TEST_TIMEOUT bounds the whole run (seconds, default 900).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
emacs=${EMACS:-emacs}
work=$(mktemp -d "${TMPDIR:-/tmp}/tandem-package-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

head=$(git -C "$repo" rev-parse HEAD)
git clone -q "$repo" "$work/clone"
git -C "$work/clone" checkout -q --detach "$head"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "package-test: note: uncommitted changes in $repo are not tested (HEAD $head is)"
fi

major=$("$emacs" -Q --batch --eval '(princ emacs-major-version)')
if [ "$major" -ge 29 ]; then
  method=vc
  package="$work/clone"
else
  method=file
  make -s -C "$work/clone" package DIST="$work/dist" >/dev/null
  package=$(ls "$work"/dist/tandem-*.tar)
fi
echo "package-test: Emacs $major, installing with package-${method}-install from $package"

# The user's pip cache is kept (a fresh HOME would download every wheel);
# everything else a user has is not: HOME, XDG dirs, TANDEM_HOME.
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}
mkdir -p "$work/home"
env -u PYTHONPATH -u VIRTUAL_ENV -u TANDEM_HOME -u TANDEM_PYTHON \
  HOME="$work/home" XDG_DATA_HOME="$work/home/.local/share" \
  XDG_CONFIG_HOME="$work/home/.config" XDG_STATE_HOME="$work/home/.local/state" \
  TANDEM_PACKAGE_TEST_METHOD=$method TANDEM_PACKAGE_TEST_PACKAGE="$package" \
  TANDEM_PACKAGE_TEST_WORK="$work" TANDEM_PACKAGE_TEST_CHECKOUT="$repo" \
  timeout "${TANDEM_PACKAGE_TEST_TIMEOUT:-900}" \
  "$emacs" -Q --batch -l "$work/clone/tests/package/install-test.el" \
  -f ert-run-tests-batch-and-exit
echo "package-test: passed in $(( $(date +%s) - start )) s"
