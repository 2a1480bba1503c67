#!/usr/bin/env bash
# The example as a user runs it, from a folder outside the workspace (a copy of this one): one
# `langgraph dev` serves the graphs, and the built `keyless test` replays every fixture through it
# in both stream-mode sets (values against golden/, the web client's four modes against
# golden-web/) with no miss, one server start for both. `write_read_file.flash` is a fixture
# recorded through DeerFlow's gateway (the workspace's `fixtures/`): it replays through this graph
# too, held to its own goldens here. Then the drift proofs, each on a patched copy with its own server:
#
# - a tool result string changed (agent.py's write_file answer): a miss, with the diagnostic, and
#   the server's `error` frame for the failed model call breaks the framing rule (where
#   `model_error.flash`, which records its model error, passes with the `error` frame its golden
#   holds);
# - a state key renamed (review.py's `drafts`) and the agent's system prompt rewritten: the
#   review's values golden goes red (changed, no miss), the agent's fixture stays green (the
#   system prompt is not part of the replay key).
#
# Runs in a fresh network namespace with only loopback when the machine allows it (`unshare -n`).
#
#   KEYLESS=target/debug/keyless PYTHON=target/venv-lg/bin/python examples/langgraph-agent/check.sh
set -euo pipefail
if [ -z "${KEYLESS_NETNS:-}" ] && command -v ip >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
  KEYLESS_NETNS=1 exec unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
[ -n "${KEYLESS_NETNS:-}" ] || echo "langgraph example: unshare -n is not permitted here; loopback ports only"
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with requirements.txt installed}"
# Absolute, but not resolved: a venv's python is a link whose target is not the venv.
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/serve.sh"
work="$(mktemp -d)"
trap 'stop_langgraph; rm -rf "$work"' EXIT

fail() { echo "langgraph example: $*" >&2; exit 1; }

# A copy of the example at $work/$1, without local state.
copy() {
  mkdir -p "$work/$1"
  cp -r "$here"/. "$work/$1"/
  rm -rf "$work/$1/.keyless" "$work/$1/.langgraph_api" "$work/$1/workspace" "$work/$1/__pycache__"
}

# Serves the copy $1 (one server for every `keyless test` in it).
model_port="$(free_port)"
serve() {
  local started=$SECONDS
  stop_langgraph
  serve_langgraph "$work/$1" "$(free_port)" "http://127.0.0.1:$model_port/v1" "$work/$1.log" \
    || fail "$1: langgraph dev did not start"
  echo "langgraph example: $1: langgraph dev ready at $LANGGRAPH_URL in $((SECONDS - started)) s"
}

# Runs `keyless test` in the served copy $1 with the remaining arguments; the exit code is in
# $status, the output in $work/$1.out and $work/$1.json (one JSON object per fixture).
run() {
  local name="$1"; shift
  cd "$work/$name"
  set +e
  "$keyless" test --gateway-url "$LANGGRAPH_URL" --model-port "$model_port" --json "$@" \
    > "$work/$name.json" 2> "$work/$name.out"
  status=$?
  set -e
  cd "$work"
}

# Checks the JSON lines of run $1: each `stem=golden:misses` (golden ok/changed/missing, the
# number of misses) must hold, and every named fixture's framing must be ok.
expect() {
  local name="$1"; shift
  "$PYTHON" - "$work/$name.json" "$@" <<'PY' || { cat "$work/$name.out" >&2; fail "$name: unexpected outcome"; }
import json, os, sys
lines = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
seen = {os.path.basename(line["fixture"])[:-len(".json")]: line for line in lines}
bad = []
for want in sys.argv[2:]:
    stem, outcome = want.split("=")
    golden, misses = outcome.split(":")
    line = seen.get(stem)
    got = "not run" if line is None else (
        line.get("error") or f'{line["golden"]}:{len(line["misses"])}')
    if got != f"{golden}:{misses}":
        bad.append(f"{stem}: expected golden {golden} with {misses} miss(es), got {got}")
    elif line["framing"] != "ok":
        bad.append(f"{stem}: framing {line['framing']}")
if bad:
    sys.exit("\n".join(bad))
PY
}

echo "langgraph example: keyless test in $work (values, then the web client's modes)"
copy app
serve app
run app
[ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "the committed fixtures failed in values mode (exit $status)"; }
expect app write_read.flash=ok:0 review.flash=ok:0 write_read_file.flash=ok:0 model_error.flash=ok:0
run app --stream-modes web --golden golden-web write_read.flash write_read_file.flash model_error.flash
[ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "the committed fixtures failed in the web modes (exit $status)"; }
expect app write_read.flash=ok:0 write_read_file.flash=ok:0 model_error.flash=ok:0
# The review graph has no web golden: its writer and critic run in parallel, and the order their
# streamed chunks and `updates` frames arrive in is the scheduler's (a values run is ordered by
# its steps). It must still replay in the web modes with no miss and framed.
run app --stream-modes web --golden golden-web review.flash
expect app review.flash=missing:0

echo "langgraph example: drift: a changed tool result string must miss, with the diagnostic"
copy tool_result
sed -i 's/return "OK"$/return "Written."/' "$work/tool_result/agent.py"
grep -q 'return "Written."' "$work/tool_result/agent.py" || fail "the tool result patch did not apply"
serve tool_result
run tool_result write_read.flash
[ "$status" -eq 1 ] || fail "a changed tool result exited $status, not 1"
grep -q 'first differing field' "$work/tool_result.json" || fail "no miss diagnostic in --json"
grep -q 'Written\.' "$work/tool_result.json" || fail "the miss does not show the changed tool result"
# The miss fails the model call, so the server fails the run with an `error` frame, which the
# fixture does not record: the framing rule fails it too.
grep -q '"violated"' "$work/tool_result.json" \
  && grep -q 'frame although the fixture records no model error' "$work/tool_result.json" \
  || fail "the unrecorded error frame did not fail the framing"
grep -m1 'first differing field' "$work/tool_result.out" | sed 's/^ */  /' 

echo "langgraph example: drift: a renamed state key must change the values golden; a rewritten system prompt must not"
copy state_key
sed -i 's/\bdrafts\b/notes/g' "$work/state_key/review.py"
sed -i 's/You are a careful assistant with two tools\./You are a terse file clerk./' "$work/state_key/agent.py"
grep -q 'notes: Annotated' "$work/state_key/review.py" || fail "the state key patch did not apply"
grep -q 'terse file clerk' "$work/state_key/agent.py" || fail "the system prompt patch did not apply"
serve state_key
run state_key
[ "$status" -eq 1 ] || fail "a renamed state key exited $status, not 1"
expect state_key write_read.flash=ok:0 write_read_file.flash=ok:0 review.flash=changed:0
grep -q 'review.flash.json: golden changed' "$work/state_key.out" || fail "no golden diagnostic"
[ -e "$work/state_key/golden/review.flash.snap.new" ] || fail "the changed golden left no pending golden"

echo "langgraph example: ok (both stream-mode sets pass as recorded; the drifts fail and pass as they must)"
