#!/usr/bin/env bash
# The example as a user runs it, from folders outside the workspace (copies of this one), then
# AG-UI's official client against the same agent, then the drift proofs:
#
# 1. Record from scratch: record.sh in a copy without fixtures or goldens (`keyless record --api
#    ag-ui` in front of the scripted upstream); the first `keyless test` reports the golden
#    missing (exit 1, no miss), `keyless accept`, then `keyless test` exits 0, and the golden it
#    accepted is the committed one.
# 2. The committed fixtures and goldens pass (`keyless test --json`): `shopping.chat`, a tool loop
#    and a follow-up, and `model_error.chat`, whose recorded model error makes the agent's
#    RUN_ERROR what its golden expects; the driver reports the messages and state it assembled
#    (`history`).
# 3. `HttpAgent` from @ag-ui/client (client/drive.mjs; its packages from client/package-lock.json)
#    drives the agent, whose model is `keyless model-server` replaying the committed fixture: no
#    miss, every recorded turn used, and the messages and state it assembles equal the driver's.
# 4. Drifts, each on a patched copy: the tool's result changed misses, with the diagnostic; the
#    state sent as a STATE_SNAPSHOT instead of a STATE_DELTA changes the golden (exit 1, no
#    miss); an event type renamed on the wire (TOOL_CALL_RESULT → TOOL_CALL_OUTPUT) breaks the
#    framing, naming the frame; the system prompt rewritten stays green (the key leaves it out).
#
# 0. The enums keyless checks the events against (harness/runner/src/driver/ag_ui/
#    schema_enums.json) are what the installed @ag-ui/core declares (scripts/schema-enums.mjs).
#
#   KEYLESS=target/debug/keyless PYTHON=target/agui-venv/bin/python examples/ag-ui-agent/check.sh
#
# NODE names the node binary (default: node); client/node_modules must be installed (`npm ci
# --prefix examples/ag-ui-agent/client`, as .ci/run does).
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with requirements.txt installed}"
# Absolute, but not resolved: a venv's python is a link whose target is not the venv.
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
export KEYLESS="$keyless"
node="${NODE:-node}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "ag-ui example: $*" >&2; exit 1; }
[ -d "$here/client/node_modules/@ag-ui/client" ] \
  || fail "client/node_modules is missing: npm ci --prefix $here/client"

enums="$here/../../harness/runner/src/driver/ag_ui/schema_enums.json"
"$node" "$here/../../scripts/schema-enums.mjs" ag-ui "$here/client" | diff -u "$enums" - >&2 ||
  fail "$enums is not what the installed @ag-ui/core declares: node scripts/schema-enums.mjs ag-ui examples/ag-ui-agent/client > it, and review"

# A copy of the example at $work/$1, without local state or the client's packages.
copy() {
  mkdir -p "$work/$1"
  (cd "$here" && tar --exclude=./client/node_modules --exclude=./.keyless --exclude=./__pycache__ -cf - .) \
    | tar -xf - -C "$work/$1"
}

# Runs `keyless` in the copy $1 with the remaining arguments; the exit code is in $status, the
# output in $work/$1.out (stdout and stderr).
run() {
  local name="$1"; shift
  set +e
  (cd "$work/$name" && "$keyless" "$@") > "$work/$name.out" 2>&1
  status=$?
  set -e
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits, bounded, until GET $1 answers.
wait_for() {
  "$PYTHON" - "$1" <<'PY' || fail "$1 did not answer within 30 s"
import sys, time, urllib.request
for _ in range(300):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit(1)
PY
}

echo "ag-ui example: record from scratch in a copy (keyless record --api ag-ui)"
copy fresh
rm -rf "$work/fresh/fixtures" "$work/fresh/golden"
"$here/record.sh" "$work/fresh" > "$work/record.out" 2>&1 || { cat "$work/record.out" >&2; fail "recording failed"; }
for stem in shopping.chat model_error.chat; do
  [ -f "$work/fresh/fixtures/$stem.json" ] || fail "record wrote no fixture $stem"
done
run fresh test
[ "$status" -eq 1 ] || { cat "$work/fresh.out" >&2; fail "the first test of a new fixture exited $status, not 1"; }
grep -q 'golden missing\|missing' "$work/fresh.out" || { cat "$work/fresh.out" >&2; fail "the first test did not report the golden missing"; }
! grep -q 'first differing field' "$work/fresh.out" || { cat "$work/fresh.out" >&2; fail "the fresh recording missed"; }
for stem in shopping.chat model_error.chat; do
  [ -f "$work/fresh/golden/$stem.snap.new" ] || fail "the first test left no pending golden for $stem"
done
run fresh accept
[ "$status" -eq 0 ] || { cat "$work/fresh.out" >&2; fail "keyless accept exited $status"; }
run fresh test
[ "$status" -eq 0 ] || { cat "$work/fresh.out" >&2; fail "the accepted golden failed (exit $status)"; }
for stem in shopping.chat model_error.chat; do
  diff -u "$here/golden/$stem.snap" "$work/fresh/golden/$stem.snap" \
    || fail "a fresh recording's golden $stem differs from the committed one"
done

echo "ag-ui example: keyless test on the committed fixture and golden"
copy app
run app test --json
[ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "the committed fixture failed (exit $status)"; }
# The messages and state the driver assembled after the last run.
"$PYTHON" - "$work/app.out" "$work/driver.json" <<'PY' || fail "keyless test --json reported no history"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
shopping = [line for line in lines if line["scenario"] == "shopping"]
history = shopping[0]["history"]
json.dump(history[-1], open(sys.argv[2], "w"), indent=2)
PY

echo "ag-ui example: AG-UI's HttpAgent drives the same agent against keyless model-server"
model_port="$(free_port)"
agent_port="$(free_port)"
(cd "$work/app" && exec "$keyless" model-server --port "$model_port" --fixture fixtures/shopping.chat.json) \
  > "$work/model-server.log" 2>&1 &
pids+=($!)
(cd "$work/app" && KEYLESS_MODEL_BASE_URL="http://127.0.0.1:$model_port/v1" KEYLESS_GATEWAY_PORT="$agent_port" \
  exec "$PYTHON" agent.py) > "$work/agent.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$model_port/_keyless/state"
wait_for "http://127.0.0.1:$agent_port/health"
mapfile -t prompts < <("$PYTHON" -c '
import json, sys
fixture = json.load(open(sys.argv[1]))
print("--prompt"); print(fixture["prompt"])
for followup in fixture.get("followups", []):
    print("--followup"); print(followup)' "$work/app/fixtures/shopping.chat.json")
"$node" "$here/client/drive.mjs" --url "http://127.0.0.1:$agent_port/" "${prompts[@]}" \
  --out "$work/client.json" --compare "$work/driver.json" \
  || { cat "$work/agent.log" >&2; fail "the official client's run differs from the driver's"; }
"$PYTHON" - "http://127.0.0.1:$model_port/_keyless/state" <<'PY' || fail "the official client's run did not replay cleanly"
import json, sys, urllib.request
state = json.load(urllib.request.urlopen(sys.argv[1]))
if state["problems"] or state["unused_turns"]:
    sys.exit(f"model server: problems {state['problems']}, unused turns {state['unused_turns']}")
print(f"ag-ui example: HttpAgent's run used all {state['served_calls']} recorded turns, no miss")
PY

echo "ag-ui example: drift: a changed tool result must miss, with the diagnostic"
copy tool_result
sed -i 's/return_value=f"Added {item}; /return_value=f"Put {item} on the list; /' "$work/tool_result/agent.py"
grep -q 'Put {item} on the list' "$work/tool_result/agent.py" || fail "the tool result patch did not apply"
run tool_result test shopping.chat
[ "$status" -eq 1 ] || fail "a changed tool result exited $status, not 1"
grep -q 'first differing field' "$work/tool_result.out" || { cat "$work/tool_result.out" >&2; fail "no miss diagnostic"; }
grep -q 'Put milk on the list' "$work/tool_result.out" || fail "the miss does not show the changed tool result"
[ ! -e "$work/tool_result/golden/shopping.chat.snap.new" ] || fail "a run that missed left a pending golden"
grep -m1 'first differing field' "$work/tool_result.out" | sed 's/^ */  /'

echo "ag-ui example: drift: the state sent as a snapshot instead of a delta must change the golden"
copy state_event
"$PYTHON" - "$work/state_event/agent.py" <<'PY'
import sys
path = sys.argv[1]
source = open(path).read()
patched = source.replace(
    "delta = StateDeltaEvent(type=EventType.STATE_DELTA, delta=[patch])",
    "delta = StateSnapshotEvent(type=EventType.STATE_SNAPSHOT, snapshot={'items': list(items)})",
).replace("from ag_ui.core import EventType, StateDeltaEvent",
          "from ag_ui.core import EventType, StateDeltaEvent, StateSnapshotEvent")
if patched.count("StateSnapshotEvent") != 2:
    sys.exit("the state event patch did not apply")
open(path, "w").write(patched)
PY
run state_event test shopping.chat
[ "$status" -eq 1 ] || fail "a changed state event exited $status, not 1"
grep -q 'golden changed' "$work/state_event.out" || { cat "$work/state_event.out" >&2; fail "no golden diagnostic"; }
! grep -q 'first differing field' "$work/state_event.out" || fail "a changed event should not miss"
[ -e "$work/state_event/golden/shopping.chat.snap.new" ] || fail "the changed golden left no pending golden"

echo "ag-ui example: drift: an event type renamed on the wire must break the framing, naming the frame"
copy renamed_event
"$PYTHON" - "$work/renamed_event/agent.py" <<'PY'
import sys
path = sys.argv[1]
source = open(path).read()
original = """    return await AGUIAdapter.dispatch_request(
        request, agent=agent, deps=StateDeps(ShoppingList())
    )"""
renamed = """    response = await AGUIAdapter.dispatch_request(
        request, agent=agent, deps=StateDeps(ShoppingList())
    )
    events = response.body_iterator

    async def renamed():
        async for chunk in events:
            text = chunk if isinstance(chunk, str) else chunk.decode()
            yield text.replace('"TOOL_CALL_RESULT"', '"TOOL_CALL_OUTPUT"')

    response.body_iterator = renamed()
    return response"""
if original not in source:
    sys.exit("the renamed event patch did not apply")
open(path, "w").write(source.replace(original, renamed))
PY
run renamed_event test shopping.chat
[ "$status" -eq 1 ] || fail "a renamed event type exited $status, not 1"
grep -q '`TOOL_CALL_OUTPUT` is not an AG-UI event type' "$work/renamed_event.out" \
  || { cat "$work/renamed_event.out" >&2; fail "the framing problem does not name the renamed event"; }
grep -m1 'is not an AG-UI event type' "$work/renamed_event.out" | sed 's/^ */  /'

echo "ag-ui example: drift: a rewritten system prompt must stay green"
copy system_prompt
sed -i "s/You keep the user's shopping list\./You are a terse grocery clerk./" "$work/system_prompt/agent.py"
grep -q 'terse grocery clerk' "$work/system_prompt/agent.py" || fail "the system prompt patch did not apply"
run system_prompt test shopping.chat
[ "$status" -eq 0 ] || { cat "$work/system_prompt.out" >&2; fail "a rewritten system prompt exited $status, not 0"; }

echo "ag-ui example: ok (records, passes as recorded, HttpAgent assembles what the driver does; the drifts fail and pass as they must)"
