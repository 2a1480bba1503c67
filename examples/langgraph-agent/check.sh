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
#   system prompt is not part of the replay key);
# - the MCP tool of the clock graphs (clock.py, its server mcp_server.py): every replay runs with
#   the server absent (mcp_server.py removed from the copy, its port proven closed); a changed
#   tool argument and an extra tool call each fail naming the server, the tool and the differing
#   field; recording again against the real server gives another tool result (the time) while
#   two replays of one fixture give byte-identical runs; a tool renamed in the server and
#   recorded again turns `<fixture>.mcp.snap` red.
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
export KEYLESS="$keyless"
python="${PYTHON:?set PYTHON to a Python with requirements.txt installed}"
# Absolute, but not resolved: a venv's python is a link whose target is not the venv.
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/serve.sh"
work="$(mktemp -d)"
pids=""
trap 'stop_langgraph; for pid in $pids; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"' EXIT

fail() { echo "langgraph example: $*" >&2; exit 1; }

# A copy of the example at $work/$1, without local state, and without the MCP server: a replay
# never starts it ([mcp.clock]'s command needs mcp_server.py) nor reaches it (nothing listens on
# [mcp.clock-http]'s port, checked). `record_copy` puts it back where a check records.
copy() {
  mkdir -p "$work/$1"
  cp -r "$here"/. "$work/$1"/
  rm -rf "$work/$1/.keyless" "$work/$1/.langgraph_api" "$work/$1/workspace" "$work/$1/__pycache__"
  rm "$work/$1/mcp_server.py"
  ! "$PYTHON" -c 'import socket; socket.create_connection(("127.0.0.1", 8931), timeout=1)' 2>/dev/null \
    || fail "something listens on 127.0.0.1:8931, the clock-http MCP server's port: replay must run without it"
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
expect app write_read.flash=ok:0 review.flash=ok:0 write_read_file.flash=ok:0 model_error.flash=ok:0 \
  clock_stdio.flash=ok:0 clock_http.flash=ok:0
run app --stream-modes web --golden golden-web write_read.flash write_read_file.flash model_error.flash \
  clock_stdio.flash clock_http.flash
[ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "the committed fixtures failed in the web modes (exit $status)"; }
expect app write_read.flash=ok:0 write_read_file.flash=ok:0 model_error.flash=ok:0 \
  clock_stdio.flash=ok:0 clock_http.flash=ok:0
# The review graph has no web golden: its writer and critic run in parallel, and the order their
# streamed chunks and `updates` frames arrive in is the scheduler's (a values run is ordered by
# its steps). It must still replay in the web modes with no miss and framed.
run app --stream-modes web --golden golden-web review.flash
expect app review.flash=missing:0

echo "langgraph example: MCP: replays run without the server and give byte-identical runs"
# What the last run of the served copy left in its thread: each message's type, text and tool
# calls. Message ids are the server's own and langchain-mcp-adapters gives each content block an
# `lc_<uuid>` id, fresh each run (not the MCP answer's): UUIDs are written <UUID>, as keyless
# normalises them.
last_run() {
  "$PYTHON" - "$LANGGRAPH_URL" > "$1" <<'PY'
import json, re, sys, urllib.request
ask = urllib.request.Request(sys.argv[1] + "/threads/search", method="POST",
    data=json.dumps({"limit": 1, "sort_by": "created_at", "sort_order": "desc"}).encode(),
    headers={"Content-Type": "application/json"})
thread = json.load(urllib.request.urlopen(ask, timeout=10))[0]
for message in thread["values"]["messages"]:
    calls = [(call["name"], call["args"]) for call in message.get("tool_calls") or []]
    line = json.dumps([message["type"], message["content"], calls])
    print(re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<UUID>", line))
PY
}
# The time the MCP server answered when fixture $1 was recorded.
recorded_time() {
  "$PYTHON" - "$1" <<'PY'
import json, sys
for exchange in json.load(open(sys.argv[1]))["exchanges"]["recorded"]:
    if exchange["label"] == "tools/call get_time":
        print(exchange["answer"]["response"]["result"]["content"][0]["text"])
PY
}
# Replays fixture $2 of the served copy $1 twice; the two runs must be byte-identical and hold
# the recorded tool result.
replays_twice() {
  local name="$1" stem="$2" said
  said="$(recorded_time "$work/$name/fixtures/$stem.json")"
  for i in 1 2; do
    run "$name" "$stem"
    [ "$status" -eq 0 ] || { cat "$work/$name.out" >&2; fail "$name: $stem failed its replay $i"; }
    last_run "$work/$name.$stem.$i"
  done
  cmp -s "$work/$name.$stem.1" "$work/$name.$stem.2" || { diff "$work/$name.$stem.1" "$work/$name.$stem.2" >&2; fail "$name: two replays of $stem differ"; }
  grep -qF "$said" "$work/$name.$stem.1" || fail "$name: the replay of $stem does not hold the recorded answer \"$said\""
  echo "  $stem: two replays, byte-identical, with the recorded \"$said\""
}
replays_twice app clock_stdio.flash
replays_twice app clock_http.flash

echo "langgraph example: MCP: recorded again against the real server (the time differs), and with a tool renamed in it"
# The real server, back in the copy for the recordings only.
cp "$here/mcp_server.py" "$work/app/"
upstream_port="$(free_port)"
"$PYTHON" "$work/app/scripted_upstream.py" --port "$upstream_port" &
pids="$pids $!"
record_in() {
  local name="$1" stem="$2"; shift 2
  (cd "$work/$name" && OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force \
    --gateway-url "$LANGGRAPH_URL" --model-port "$model_port" \
    --upstream "http://127.0.0.1:$upstream_port/v1" --recording-out "$work/$name.$stem.jsonl" \
    --scenario "$stem" --mode flash --prompt "What time is it in Paris?" >"$work/$name.$stem.log" 2>&1) \
    || { cat "$work/$name.$stem.log" >&2; fail "$name: recording $stem failed"; }
}
sleep 1 # the server answers the time to the second
record_in app clock_stdio
sed -i 's/name="get_time"/name="get_clock"/' "$work/app/mcp_server.py"
grep -q 'name="get_clock"' "$work/app/mcp_server.py" || fail "the tool rename patch did not apply"
(cd "$work/app" && exec "$PYTHON" mcp_server.py http 8931 >"$work/mcp_server.log" 2>&1) &
mcp_pid=$!
pids="$pids $mcp_pid"
"$PYTHON" -c 'import socket, time
for _ in range(80):
    try: socket.create_connection(("127.0.0.1", 8931), timeout=1); break
    except OSError: time.sleep(0.25)' 
record_in app clock_http
kill "$mcp_pid"; wait "$mcp_pid" 2>/dev/null || true
rm "$work/app/mcp_server.py"
then="$(recorded_time "$here/fixtures/clock_stdio.flash.json")"
now="$(recorded_time "$work/app/fixtures/clock_stdio.flash.json")"
[ -n "$now" ] && [ "$then" != "$now" ] || fail "recording again did not change the tool's answer (\"$then\", \"$now\")"
echo "  clock_stdio recorded again: \"$then\" became \"$now\""
! "$PYTHON" -c 'import socket; socket.create_connection(("127.0.0.1", 8931), timeout=1)' 2>/dev/null \
  || fail "the renamed server still listens on 8931"
replays_twice app clock_stdio.flash
run app clock_http.flash
[ "$status" -eq 1 ] || { cat "$work/app.out" >&2; fail "a renamed MCP tool exited $status, not 1"; }
expect app clock_http.flash=changed:0
[ -e "$work/app/golden/clock_http.flash.mcp.snap.new" ] || fail "the renamed tool left no pending clock_http.flash.mcp.snap.new"
grep -q '"get_clock"' "$work/app/golden/clock_http.flash.mcp.snap.new" || fail "the pending MCP golden does not name get_clock"
grep -m1 'clock_http.flash.json: golden changed' "$work/app.out" | sed 's/^ */  /' | cut -c1-240

echo "langgraph example: drift: a changed tool result string must miss, with the diagnostic"
copy tool_result
sed -i 's/return "OK"$/return "Written."/' "$work/tool_result/agent.py"
grep -q 'return "Written."' "$work/tool_result/agent.py" || fail "the tool result patch did not apply"
# clock.py: the stdio graph sends another argument, the HTTP graph calls its tool twice.
"$PYTHON" - "$work/tool_result/clock.py" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
patched = text.replace('arguments = {"city": city}',
                       'arguments = {"city": city.upper() if server == "clock" else city}')
# The extra call in one session (the adapter opens one per call otherwise, which would miss at
# its `initialize` first).
patched = patched.replace(
    '        client = MultiServerMCPClient({server: connection(server)})\n',
    '        client = MultiServerMCPClient({server: connection(server)})\n'
    '        if server == "clock-http":\n'
    '            from langchain_mcp_adapters.tools import load_mcp_tools\n'
    '            async with client.session(server) as session:\n'
    '                tool = {t.name: t for t in await load_mcp_tools(session)}["get_time"]\n'
    '                await tool.ainvoke({"city": city})\n'
    '                return await tool.ainvoke({"city": city})\n')
if patched.count("clock-http") != text.count("clock-http") + 1 or "upper()" not in patched:
    sys.exit("the clock.py patch did not apply")
open(path, "w").write(patched)
PY
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

# The same copy and server: clock.py was patched too (before the server started), the clock
# fixtures replayed.
echo "langgraph example: MCP drift: a changed tool argument (stdio) and an extra tool call (HTTP) must miss, naming the call"
run tool_result clock_stdio.flash clock_http.flash
[ "$status" -eq 1 ] || { cat "$work/tool_result.out" >&2; fail "the MCP drifts exited $status, not 1"; }
for said in 'mcp miss: `tools/call get_time` from `clock` has no recorded answer' \
  'first differing field: params.arguments.city: recorded "Paris", now "PARIS"' \
  'mcp miss: `tools/call get_time` from `clock-http` has no recorded answer' \
  'recorded 1 time(s) and each answer was already served'; do
  grep -qF "$said" "$work/tool_result.out" || { cat "$work/tool_result.out" >&2; fail "the MCP drifts do not say: $said"; }
done
grep -m2 'mcp miss' "$work/tool_result.out" | sed 's/^ */  /' | cut -c1-240

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

echo "langgraph example: ok (both stream-mode sets pass as recorded, the MCP tool with its server absent; the drifts fail and pass as they must)"
