#!/usr/bin/env bash
# The example as a user runs it, from a folder outside the workspace (a copy of this one, its
# node_modules linked): `keyless test --api ai-sdk` starts the chat route for each fixture and
# replays it with no miss against the committed golden, and its fault scenario (an error chunk
# in the last model call's stream) against its own golden, the route's `error` part. Then the AI SDK's own client
# (official_client.mjs: DefaultChatTransport + readUIMessageStream) drives the same route, its
# model `keyless model-server` replaying the fixture, and the conversation it assembles must
# equal the one keyless's driver assembled (message ids aside: each client mints its own). Then
# the drift proofs, each on a patched copy:
#
# - the tool's result changed (server.mjs's forecast): a miss, with the diagnostic, exit 1;
# - a part changed (message metadata on `start` and `finish`): the golden goes red, no miss;
# - `finish` dropped (`sendFinish: false`): the framing rule fails it;
# - a part type renamed on the wire (`text-delta` → `text-chunk`): the framing rule fails it
#   where the AI SDK's client stops reading;
# - the system prompt rewritten: green (the system prompt is not part of the replay key).
#
# The clock route (server.mjs's /api/clock, clock.keyless.toml) calls an MCP server's tool through
# the AI SDK's MCP client (@ai-sdk/mcp, Streamable HTTP): its fixture replays with the server
# absent (mcp_server.py removed from the copy, its port proven closed); a changed tool argument
# fails naming the server, the tool and the differing field, an extra tool call fails naming the
# call, and a tool renamed in the server leaves a pending `clock.chat.mcp.snap.new`.
#
# The same agent answers as an OpenAI-style endpoint too (server.mjs's /v1/chat/completions and
# /v1/responses): its fixtures replay with `--api openai-chat` and `--api openai-responses`, and
# the changed tool result misses there as well.
#
# OpenAI's own client (`openai`: its `chat.completions.stream` and `responses.stream` helpers)
# does the same against the OpenAI-style routes, compared with `--api openai-chat` and
# `--api openai-responses`.
#
# First, the enums keyless checks the chunks against (harness/runner/src/driver/ai_sdk/
# schema_enums.json) must be what the installed `ai` declares (scripts/schema-enums.mjs).
#
# Runs in a fresh network namespace with only loopback when the machine allows it (`unshare -n`).
#
#   KEYLESS=target/debug/keyless PYTHON=target/mcp-venv/bin/python examples/ai-sdk-chat/check.sh
#
# after `npm ci` here; PYTHON has `mcp==1.26.0`, for the clock route's MCP server (recorded again
# with a tool renamed).
set -euo pipefail
if [ -z "${KEYLESS_NETNS:-}" ] && command -v ip >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
  KEYLESS_NETNS=1 exec unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:?set PYTHON to a Python with mcp==1.26.0, to run the clock MCP server}"
# Absolute, but not resolved (a venv's python is a link whose target is not the venv): the
# checks below run from other folders.
python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
[ -d "$here/node_modules/ai" ] || { echo "ai-sdk example: run npm ci in $here first" >&2; exit 1; }
work="$(mktemp -d)"
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"' EXIT

fail() { echo "ai-sdk example: $*" >&2; exit 1; }

enums="$here/../../harness/runner/src/driver/ai_sdk/schema_enums.json"
node "$here/../../scripts/schema-enums.mjs" ai-sdk "$here" | diff -u "$enums" - >&2 ||
  fail "$enums is not what the installed ai declares: node scripts/schema-enums.mjs ai-sdk examples/ai-sdk-chat > it, and review"

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

# A copy of the example at $work/$1, without local state, its node_modules linked.
copy() {
  mkdir -p "$work/$1"
  (cd "$here" && find . -maxdepth 1 -mindepth 1 ! -name node_modules ! -name .keyless ! -name web \
     -exec cp -r {} "$work/$1"/ \;)
  ln -s "$here/node_modules" "$work/$1/node_modules"
}

# Runs `keyless test --json` in the copy $1 with the remaining arguments; the exit code is in
# $status, the output in $work/$1.out and $work/$1.json.
run() {
  local name="$1"; shift
  cd "$work/$name"
  set +e
  "$keyless" test --json "$@" > "$work/$name.json" 2> "$work/$name.out"
  status=$?
  set -e
  cd "$work"
}

# The field $2 (a JS expression over `line`) of run $1's first JSON line.
field() {
  node -e 'const line = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").split("\n")[0]);
           console.log(JSON.stringify(eval(process.argv[2])))' "$work/$1.json" "$2"
}

echo "ai-sdk example: keyless test in $work (the chat route started for each fixture)"
copy app
run app
[ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "the committed fixture failed (exit $status)"; }
[ "$(field app 'line.golden + ":" + line.misses.length + ":" + line.framing')" = '"ok:0:ok"' ] \
  || fail "unexpected outcome: $(cat "$work/app.json")"
# The fault scenario (weather.chat@stream-error): the provider's error chunk mid-stream reaches
# the page as the route's `error` part, its own golden, and the fault fired once.
node - "$work/app.json" <<'JS' || fail "the stream-error fault scenario: $(cat "$work/app.json")"
const lines = require("fs").readFileSync(process.argv[2], "utf8").trim().split("\n").map(JSON.parse);
const fault = lines.find((line) => line.fixture.endsWith("weather.chat@stream-error.faults.toml"));
if (!fault || fault.golden !== "ok" || fault.misses.length !== 0) process.exit(1);
const fired = JSON.stringify(fault.faults);
if (fired !== JSON.stringify([{ fault: "turn 4: stream_error after 2 chunks", fired: 1, times: 1 }])) {
  console.error(`faults: ${fired}`);
  process.exit(1);
}
JS
grep -q 'faults: turn 4: stream_error after 2 chunks fired 1/1' "$work/app.out" ||
  fail "the verdict does not say the stream error fired: $(cat "$work/app.out")"

# Starts `keyless model-server` replaying the fixture $1 and the route (server.mjs) with its model
# there; their URLs are in $model_url and $route_url.
serve_route() {
  local model_port route_port
  model_port="$(free_port)"
  route_port="$(free_port)"
  cd "$work/app"
  "$keyless" model-server --port "$model_port" --fixture "$1" \
    --reset-token-file "$work/reset-token" > "$work/model.log" 2>&1 &
  pids+=($!)
  OPENAI_BASE_URL="http://127.0.0.1:$model_port/v1" OPENAI_API_KEY=unused PORT="$route_port" \
    node server.mjs > "$work/route.log" 2>&1 &
  pids+=($!)
  model_url="http://127.0.0.1:$model_port"
  route_url="http://127.0.0.1:$route_port"
  for _ in $(seq 100); do
    curl -sf "$route_url/health" >/dev/null 2>&1 && curl -sf "$model_url/_keyless/state" >/dev/null 2>&1 && return
    sleep 0.1
  done
  fail "the route or the model server did not start: $(cat "$work/route.log" "$work/model.log")"
}

stop_route() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  pids=()
}

# Checks that the conversation the official client printed in $work/official.json equals the
# last `history` of run $1 (message ids aside: each client mints its own), then that the
# official client's own run missed nothing.
same_conversation() {
  node - "$work/$1.json" "$work/official.json" <<'JS' || fail "$1: the two clients assembled different conversations"
const fs = require("fs");
const line = JSON.parse(fs.readFileSync(process.argv[2], "utf8").split("\n")[0]);
const driver = line.history[line.history.length - 1];
const official = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const canonical = (value) => Array.isArray(value) ? value.map(canonical)
  : value && typeof value === "object"
    ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical(value[k])]))
    : value;
const strip = (messages) => canonical(messages.map(({ id, ...rest }) => rest));
const [a, b] = [JSON.stringify(strip(driver), null, 1), JSON.stringify(strip(official), null, 1)];
if (a !== b) {
  console.error(`keyless's driver:\n${a}\nthe official client:\n${b}`);
  process.exit(1);
}
const parts = official.flatMap((m) => m.parts ?? [m.content]).length;
console.log(`ai-sdk example: ${official.length} messages, ${parts} parts, equal`);
JS
  [ "$(curl -sf "$model_url/_keyless/misses")" = "[]" ] \
    || fail "the official client's run missed: $(curl -s "$model_url/_keyless/misses")"
}

# The fixture $1's prompts, one per line.
prompts_of() {
  node -e 'const f = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
           for (const p of [f.prompt, ...(f.followups ?? [])]) console.log(p)' "$work/app/$1"
}

echo "ai-sdk example: the AI SDK's own client assembles the conversation keyless's driver assembled"
serve_route fixtures/weather.chat.json
# The plain fixture only: the running model server serves it, not the fault scenario.
run app weather.chat --gateway-url "$route_url" --model-server "$model_url" \
    --reset-token-file "$work/reset-token"
[ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "the driver at the running route failed (exit $status)"; }
curl -sf -X POST -H 'content-type: application/json' -d '{"fixture": "weather.chat"}' \
    -H "x-keyless-reset-token: $(cat "$work/reset-token")" \
  "$model_url/_keyless/reset" >/dev/null
mapfile -t prompt_list < <(prompts_of fixtures/weather.chat.json)
(cd "$work/app" && node official_client.mjs "$route_url/api/chat" "${prompt_list[@]}") \
  > "$work/official.json" || fail "the official client failed"
same_conversation app
stop_route

for api in openai-chat openai-responses; do
  echo "ai-sdk example: OpenAI's own client (openai) assembles the conversation keyless's driver sent (--api $api)"
  serve_route "fixtures-$api/weather.chat.json"
  run app --api "$api" --fixtures "fixtures-$api" --golden "golden-$api" \
    --gateway-url "$route_url" --model-server "$model_url" \
    --reset-token-file "$work/reset-token"
  [ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "--api $api at the running route failed (exit $status)"; }
  curl -sf -X POST -H 'content-type: application/json' -d '{"fixture": "weather.chat"}' \
    -H "x-keyless-reset-token: $(cat "$work/reset-token")" \
    "$model_url/_keyless/reset" >/dev/null
  mapfile -t prompt_list < <(prompts_of "fixtures-$api/weather.chat.json")
  model="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).model)' \
    "$work/app/fixtures-$api/weather.chat.json")"
  (cd "$work/app" && node official_openai_client.mjs "${api#openai-}" "$route_url/v1" "$model" \
    "${prompt_list[@]}") > "$work/official.json" || fail "--api $api: the official client failed"
  same_conversation app
  stop_route
done

echo "ai-sdk example: drift: a changed tool result must miss, with the diagnostic"
copy tool_result
sed -i 's/temperatureC: 21 }/temperatureC: 22 }/' "$work/tool_result/server.mjs"
grep -q 'temperatureC: 22' "$work/tool_result/server.mjs" || fail "the tool result patch did not apply"
run tool_result
[ "$status" -eq 1 ] || fail "a changed tool result exited $status, not 1"
[ "$(field tool_result 'line.misses.length > 0')" = true ] || fail "no miss: $(cat "$work/tool_result.json")"
grep -q 'first differing field' "$work/tool_result.json" || fail "no miss diagnostic in --json"
grep -m1 'first differing field' "$work/tool_result.out" | sed 's/^ */  /'

echo "ai-sdk example: drift: a changed part must change the golden, with no miss"
copy part
sed -i 's/result.toUIMessageStreamResponse()/result.toUIMessageStreamResponse({ messageMetadata: () => ({ app: "chat" }) })/' \
  "$work/part/server.mjs"
grep -q 'messageMetadata: () =>' "$work/part/server.mjs" || fail "the part patch did not apply"
run part
[ "$status" -eq 1 ] || fail "a changed part exited $status, not 1"
[ "$(field part 'line.golden + ":" + line.misses.length')" = '"changed:0"' ] \
  || fail "unexpected outcome: $(cat "$work/part.json")"
[ -e "$work/part/golden/weather.chat.snap.new" ] || fail "the changed golden left no pending golden"

echo "ai-sdk example: drift: a dropped finish must break the framing"
copy finish
sed -i 's/result.toUIMessageStreamResponse()/result.toUIMessageStreamResponse({ sendFinish: false })/' \
  "$work/finish/server.mjs"
grep -q 'sendFinish: false' "$work/finish/server.mjs" || fail "the finish patch did not apply"
run finish
[ "$status" -eq 1 ] || fail "a dropped finish exited $status, not 1"
grep -q 'expected \\"finish\\" then \\"\[DONE\]\\"' "$work/finish.json" \
  || fail "the framing did not name the missing finish: $(cat "$work/finish.json")"

echo "ai-sdk example: drift: a renamed part type must fail where the AI SDK's client stops reading"
copy renamed
sed -i 's/    res.write(chunk);/    res.write(Buffer.from(chunk).toString().replaceAll(\x27"text-delta"\x27, \x27"text-chunk"\x27));/' \
  "$work/renamed/server.mjs"
grep -q '"text-chunk"' "$work/renamed/server.mjs" || fail "the renamed part patch did not apply"
run renamed
[ "$status" -eq 1 ] || fail "a renamed part type exited $status, not 1"
grep -q 'not a UI message chunk type' "$work/renamed.json" \
  || fail "the framing did not name the renamed part: $(cat "$work/renamed.json")"

echo "ai-sdk example: drift: a rewritten system prompt must stay green"
copy system
sed -i 's/You are a concise weather assistant\./You are a cheerful forecaster./' "$work/system/server.mjs"
grep -q 'cheerful forecaster' "$work/system/server.mjs" || fail "the system prompt patch did not apply"
run system
[ "$status" -eq 0 ] || { cat "$work/system.out" >&2; fail "a rewritten system prompt exited $status, not 0"; }

echo "ai-sdk example: the clock route's MCP tool replays with its server absent; a changed argument must miss"
port_closed() {
  node -e 'const s = require("net").connect(Number(process.argv[1]), "127.0.0.1");
           s.on("connect", () => process.exit(1)); s.on("error", () => process.exit(0))' "$1"
}
copy clock
rm "$work/clock/mcp_server.py"
port_closed 8932 || fail "something listens on 127.0.0.1:8932, the clock MCP server's port: replay must run without it"
run clock --config clock.keyless.toml
[ "$status" -eq 0 ] || { cat "$work/clock.out" >&2; fail "the clock fixture failed (exit $status)"; }
[ "$(field clock 'line.golden + ":" + line.misses.length + ":" + line.framing')" = '"ok:0:ok"' ] \
  || fail "the clock fixture: unexpected outcome: $(cat "$work/clock.json")"
# The route sends its MCP tool another argument than the model asked for.
sed -i 's/    tools: await client.tools(),/    tools: Object.fromEntries(Object.entries(await client.tools()).map(([name, t]) =>\n      [name, { ...t, execute: (input, options) => t.execute({ city: input.city.toUpperCase() }, options) }])),/' \
  "$work/clock/server.mjs"
grep -q 'toUpperCase' "$work/clock/server.mjs" || fail "the clock argument patch did not apply"
run clock --config clock.keyless.toml
[ "$status" -eq 1 ] || { cat "$work/clock.out" >&2; fail "a changed MCP tool argument exited $status, not 1"; }
for said in 'mcp miss: `tools/call get_time` from `clock` has no recorded answer' \
  'first differing field: params.arguments.city: recorded "Paris", now "PARIS"'; do
  grep -qF "$said" "$work/clock.out" || { cat "$work/clock.out" >&2; fail "the changed MCP argument does not say: $said"; }
done
grep -m1 'mcp miss' "$work/clock.out" | sed 's/^ */  /' | cut -c1-240

echo "ai-sdk example: an extra MCP tool call must miss, naming the call"
copy clock_extra
rm "$work/clock_extra/mcp_server.py"
# The route calls the MCP tool twice for the model's one call: the second has no recorded answer.
sed -i 's/    tools: await client.tools(),/    tools: Object.fromEntries(Object.entries(await client.tools()).map(([name, t]) =>\n      [name, { ...t, execute: async (input, options) => { await t.execute(input, options); return t.execute(input, options); } }])),/' \
  "$work/clock_extra/server.mjs"
grep -q 'await t.execute(input, options); return t.execute' "$work/clock_extra/server.mjs" \
  || fail "the extra call patch did not apply"
run clock_extra --config clock.keyless.toml
[ "$status" -eq 1 ] || { cat "$work/clock_extra.out" >&2; fail "an extra MCP tool call exited $status, not 1"; }
for said in 'mcp miss: `tools/call get_time` from `clock` has no recorded answer' \
  'recorded 1 time(s) and each answer was already served'; do
  grep -qF "$said" "$work/clock_extra.out" || { cat "$work/clock_extra.out" >&2; fail "the extra MCP call does not say: $said"; }
done

echo "ai-sdk example: a tool renamed in the server, recorded again, must change the server's contract golden"
# Recorded against the real server with its tool renamed (PYTHON runs it; the scripted upstream
# stands in for the model, whose `get_time` call the AI SDK now answers as an unavailable tool),
# then replayed with the server stopped: the replay is clean, the server's contract is not.
copy clock_renamed
sed -i 's/@server.tool(name="get_time")/@server.tool(name="get_clock")/' "$work/clock_renamed/mcp_server.py"
grep -q 'name="get_clock"' "$work/clock_renamed/mcp_server.py" || fail "the tool rename patch did not apply"
upstream_port="$(free_port)"
node "$here/scripted_upstream.mjs" --port "$upstream_port" > "$work/clock_upstream.log" 2>&1 &
renamed_upstream=$!
pids+=("$renamed_upstream")
"$python" "$work/clock_renamed/mcp_server.py" http 8932 > "$work/clock_mcp.log" 2>&1 &
renamed_server=$!
pids+=("$renamed_server")
node -e 'const net = require("net"); let left = 80;
  const again = () => net.connect(8932, "127.0.0.1").on("connect", () => process.exit(0))
    .on("error", () => (--left ? setTimeout(again, 250) : process.exit(1)));
  again()' || { cat "$work/clock_mcp.log" >&2; fail "the renamed MCP server did not start"; }
(cd "$work/clock_renamed" && OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force \
  --config clock.keyless.toml --upstream "http://127.0.0.1:$upstream_port/v1" \
  --scenario clock --mode chat --prompt "What time is it in Paris?" > "$work/clock_record.out" 2>&1) ||
  { cat "$work/clock_record.out" >&2; fail "recording against the renamed server failed"; }
kill "$renamed_server" "$renamed_upstream" 2>/dev/null || true
wait "$renamed_server" "$renamed_upstream" 2>/dev/null || true
rm "$work/clock_renamed/mcp_server.py"
port_closed 8932 || fail "the renamed MCP server still listens on 8932"
run clock_renamed --config clock.keyless.toml
[ "$status" -eq 1 ] || { cat "$work/clock_renamed.out" >&2; fail "a renamed MCP tool exited $status, not 1"; }
[ "$(field clock_renamed 'line.misses.length')" = 0 ] || fail "the renamed tool's replay missed: $(cat "$work/clock_renamed.json")"
pending="$work/clock_renamed/golden-clock/clock.chat.mcp.snap.new"
[ -e "$pending" ] && grep -q '"get_clock"' "$pending" ||
  { cat "$work/clock_renamed.out" >&2; fail "the renamed tool left no pending clock.chat.mcp.snap.new naming get_clock"; }

for api in openai-chat openai-responses; do
  echo "ai-sdk example: the same agent as an OpenAI-style endpoint: keyless test --api $api"
  run app --api "$api" --fixtures "fixtures-$api" --golden "golden-$api"
  [ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "--api $api: the committed fixture failed (exit $status)"; }
  [ "$(field app 'line.golden + ":" + line.misses.length + ":" + line.framing')" = '"ok:0:ok"' ] \
    || fail "--api $api: unexpected outcome: $(cat "$work/app.json")"
  run tool_result --api "$api" --fixtures "fixtures-$api" --golden "golden-$api"
  [ "$status" -eq 1 ] || fail "--api $api: a changed tool result exited $status, not 1"
  grep -q 'first differing field' "$work/tool_result.json" || fail "--api $api: no miss diagnostic"
done

echo "ai-sdk example: ok (the fixtures replay in the three dialects, the MCP tool with its server absent; both clients agree; the drifts fail and pass as they must)"
