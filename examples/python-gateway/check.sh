#!/usr/bin/env bash
# The example as a user runs it, from a folder outside the workspace (a copy of this one, no
# Cargo.toml in sight): the committed golden passes, and a gateway whose conversation drifts
# (message names off) fails with the miss diagnostic in the output and in --json.
#
#   KEYLESS=target/debug/keyless PYTHON=target/ci-venv/bin/python examples/python-gateway/check.sh
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with openai installed}"
# Absolute, but not resolved: a venv's python is a link whose target is not the venv.
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$(dirname "$0")"/. "$work"/
rm -rf "$work/.keyless"
cd "$work"

fail() { echo "python example: $*" >&2; exit 1; }

echo "python example: keyless test in $work"
"$keyless" test || fail "keyless test failed on the committed fixture and golden"

echo "python example: the same gateway with message names off must miss"
set +e
GATEWAY_SEND_NAMES=0 "$keyless" test > drift.out 2>&1
table=$?
GATEWAY_SEND_NAMES=0 "$keyless" test --json > drift.json 2> drift.err
json=$?
set -e
[ "$table" -eq 1 ] || fail "a drifted gateway exited $table, not 1"
[ "$json" -eq 1 ] || fail "a drifted gateway exited $json with --json, not 1"
grep -q 'first differing field: \[0\].name' drift.out || fail "no miss diagnostic in the output"
grep -q 'first differing field: \[0\]\.name' drift.json || fail "no miss diagnostic in --json"
[ ! -e golden/word_count.flash.snap.new ] || fail "a run that missed left a pending golden"
echo "python example: ok (passes as recorded; the drift fails with its diagnostic)"
