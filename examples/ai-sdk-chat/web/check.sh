#!/usr/bin/env bash
# The browser suite as CI runs it (after `npm ci` here and in .., and `npm run build` here), each
# run from a copy of the example outside the workspace, its node_modules linked:
#
# - the suite passes with two workers, each with its own `keyless serve` (keyless/playwright's
#   worker fixture: the page, the route, the fixtures recorded through the browser);
# - drift the page shows goes red: the tool's result changed (server.mjs's forecast: the model
#   call misses: the test fails with keyless's diagnostic, the worker's keyless serve exits 1
#   naming the miss, the run fails), and the tool loop cut to
#   one step (`stepCountIs(1)`: the answer never comes, the page shows the tool call alone);
# - drift nobody sees stays green: the system prompt reworded (not part of the replay key) and
#   the answer's text streamed in other chunks (`smoothStream()`).
#
# Then the Vitest suite (tests/client.test.ts: the AI SDK's own client, keyless/vitest's globalSetup
# and useKeyless): green as recorded, and red on the changed tool result with keyless's diagnostic
# in Vitest's own failure output.
#
# Then the AI SDK's own client (../official_client.mjs: DefaultChatTransport + readUIMessageStream)
# against `keyless serve`: exit 0 after the recorded conversation, 1 after an unrecorded prompt,
# the summary naming the miss.
#
# Runs in a fresh network namespace with only loopback when the machine allows it (`unshare -n`).
#
#   KEYLESS=target/debug/keyless examples/ai-sdk-chat/web/check.sh
set -euo pipefail
if [ -z "${KEYLESS_NETNS:-}" ] && command -v ip >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
  KEYLESS_NETNS=1 exec unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
export KEYLESS="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
web="$(cd "$(dirname "$0")" && pwd)"
example="$(dirname "$web")"
[ -d "$web/node_modules/@ai-sdk/react" ] || { echo "ai-sdk web: run npm ci in $web first" >&2; exit 1; }
[ -d "$example/node_modules/ai" ] || { echo "ai-sdk web: run npm ci in $example first" >&2; exit 1; }
[ -f "$web/dist/index.html" ] || { echo "ai-sdk web: run npm run build in $web first" >&2; exit 1; }
work="$(mktemp -d)"
serve_pid=""
trap '[ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

fail() { echo "ai-sdk web: $*" >&2; exit 1; }

# A copy of the example at $work/$1 (the route and the page, the built page included), without
# local state, both node_modules linked.
copy() {
  mkdir -p "$work/$1/web"
  (cd "$example" && find . -maxdepth 1 -mindepth 1 ! -name node_modules ! -name .keyless ! -name web \
     -exec cp -r {} "$work/$1"/ \;)
  (cd "$web" && find . -maxdepth 1 -mindepth 1 ! -name node_modules ! -name .keyless \
     ! -name test-results ! -name playwright-report -exec cp -r {} "$work/$1/web"/ \;)
  ln -s "$example/node_modules" "$work/$1/node_modules"
  ln -s "$web/node_modules" "$work/$1/web/node_modules"
}

# Applies the sed script $2 to the copy $1's server.mjs; $3 must then be in it.
patch_route() {
  sed -i "$2" "$work/$1/server.mjs"
  grep -q "$3" "$work/$1/server.mjs" || fail "the $1 patch did not apply"
}

# Runs the suite in the copy $1; its exit code in $status, its output in $work/$1.out.
suite() {
  cd "$work/$1/web"
  set +e
  npx playwright test > "$work/$1.out" 2>&1
  status=$?
  set -e
  cd "$work"
}

echo "[${SECONDS}s] ai-sdk web: the browser suite against keyless serve"
copy app
start=$(date +%s.%N)
suite app
[ "$status" -eq 0 ] || { cat "$work/app.out" >&2; fail "the suite failed (exit $status)"; }
grep -q 'using 2 workers' "$work/app.out" || { cat "$work/app.out" >&2; fail "the suite did not run on two workers"; }
grep -E 'passed|workers' "$work/app.out" | sed 's/^ */  /'
echo "  ($(node -e "console.log((($(date +%s.%N)) - $start).toFixed(1))") s)"

echo "[${SECONDS}s] ai-sdk web: drift: a changed tool result must miss: the tests red with the diagnostic, keyless serve exit 1"
copy tool_result
patch_route tool_result 's/temperatureC: 21 }/temperatureC: 22 }/' 'temperatureC: 22'
suite tool_result
[ "$status" -ne 0 ] || fail "a changed tool result passed"
grep -q 'keyless: the model side of this test' "$work/tool_result.out" \
  || { cat "$work/tool_result.out" >&2; fail "no test failed with keyless's diagnostic"; }
grep -q 'keyless serve exited 1' "$work/tool_result.out" \
  || { cat "$work/tool_result.out" >&2; fail "keyless serve did not exit 1 after the miss"; }
grep -q 'first differing field' "$work/tool_result.out" \
  || { cat "$work/tool_result.out" >&2; fail "no miss diagnostic in the run's output"; }
grep -m1 'first differing field' "$work/tool_result.out" | sed 's/^ */  /'

echo "[${SECONDS}s] ai-sdk web: drift: the tool loop cut to one step must show no answer, the run red"
copy one_step
patch_route one_step 's/stepCountIs(5)/stepCountIs(1)/' 'stepCountIs(1)'
suite one_step
[ "$status" -ne 0 ] || fail "a tool loop of one step passed"
grep -qE '^\s*-\s+"text: In Paris it is sunny and 21 °C\.",' "$work/one_step.out" \
  || { cat "$work/one_step.out" >&2; fail "the failure does not show the missing answer"; }
echo "  the page lacks \"text: In Paris it is sunny and 21 °C.\" ($(grep -cE '^\s+✘' "$work/one_step.out") tests red)"

echo "[${SECONDS}s] ai-sdk web: drift: a reworded system prompt must stay green"
copy system
patch_route system 's/You are a concise weather assistant\./You are a cheerful forecaster./' 'cheerful forecaster'
suite system
[ "$status" -eq 0 ] || { cat "$work/system.out" >&2; fail "a reworded system prompt failed (exit $status)"; }

echo "[${SECONDS}s] ai-sdk web: drift: the answer streamed in other chunks (smoothStream) must stay green"
copy chunks
patch_route chunks 's/^import { convertToModelMessages, stepCountIs, streamText, tool } from "ai";/import { convertToModelMessages, smoothStream, stepCountIs, streamText, tool } from "ai";/; s/    stopWhen: stepCountIs(5),/    stopWhen: stepCountIs(5),\n    experimental_transform: smoothStream({ delayInMs: null, chunking: "line" }),/' \
  'experimental_transform: smoothStream'
suite chunks
[ "$status" -eq 0 ] || { cat "$work/chunks.out" >&2; fail "re-chunked text failed (exit $status)"; }

# Runs the Vitest suite in the copy $1 (with the remaining arguments); its exit code in $status,
# its output in $work/$1.vitest.out.
vitest_suite() {
  local name="$1"; shift
  cd "$work/$name/web"
  set +e
  NO_COLOR=1 npx vitest run "$@" > "$work/$name.vitest.out" 2>&1
  status=$?
  set -e
  cd "$work"
}

echo "[${SECONDS}s] ai-sdk web: the Vitest suite (the AI SDK's own client, keyless/vitest) against keyless serve"
vitest_suite app
[ "$status" -eq 0 ] || { cat "$work/app.vitest.out" >&2; fail "the Vitest suite failed (exit $status)"; }
grep -E 'Tests +[0-9]+ passed' "$work/app.vitest.out" | sed 's/^ */  /'
echo "[${SECONDS}s] ai-sdk web: the Vitest suite without the globalSetup (useKeyless starts a keyless serve per block)"
vitest_suite app -c vitest.per-file.config.ts
[ "$status" -eq 0 ] || { cat "$work/app.vitest.out" >&2; fail "the Vitest suite without the globalSetup failed (exit $status)"; }
grep -E 'Tests +[0-9]+ passed' "$work/app.vitest.out" | sed 's/^ */  /'

echo "[${SECONDS}s] ai-sdk web: drift: a changed tool result must fail the Vitest suite with keyless's diagnostic"
vitest_suite tool_result
[ "$status" -ne 0 ] || fail "a changed tool result passed the Vitest suite"
grep -q 'keyless: the model side of this test' "$work/tool_result.vitest.out" \
  || { cat "$work/tool_result.vitest.out" >&2; fail "no Vitest test failed with keyless's diagnostic"; }
grep -q 'keyless serve exited 1' "$work/tool_result.vitest.out" \
  || { cat "$work/tool_result.vitest.out" >&2; fail "the Vitest run did not report keyless serve's exit 1"; }
grep -m1 'first differing field' "$work/tool_result.vitest.out" | sed 's/^ */  /'

echo "[${SECONDS}s] ai-sdk web: the AI SDK's own client against keyless serve"
# Starts `keyless serve` on paris.chat in the copy `app`; its URLs in $gateway, its stderr in
# $work/serve.err.
serve() {
  cd "$work/app/web"
  "$KEYLESS" serve --fixture paris.chat > "$work/serve.out" 2> "$work/serve.err" &
  serve_pid=$!
  for _ in $(seq 300); do
    [ -s "$work/serve.out" ] && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.err" >&2; fail "keyless serve exited early"; }
    sleep 0.1
  done
  gateway="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").split("\n")[0]).gateway_url)' "$work/serve.out")"
}
# Stops it; its exit code in $status.
stop() {
  kill -TERM "$serve_pid"
  set +e
  wait "$serve_pid"
  status=$?
  set -e
  serve_pid=""
}
serve
node "$work/app/official_client.mjs" "$gateway/api/chat" "What is the weather in Paris?" "And in Lisbon?" \
  > "$work/official.json" || fail "the official client failed on the recorded conversation"
stop
[ "$status" -eq 0 ] || { cat "$work/serve.err" >&2; fail "keyless serve exited $status after the recorded conversation"; }
sed 's/^/  /' "$work/serve.err" | grep 'answered as recorded'
serve
node "$work/app/official_client.mjs" "$gateway/api/chat" "What is the weather in Berlin?" \
  > /dev/null 2>&1 || true
stop
[ "$status" -eq 1 ] || { cat "$work/serve.err" >&2; fail "keyless serve exited $status after an unrecorded prompt, not 1"; }
grep -q 'Berlin' "$work/serve.err" && grep -q 'first differing field' "$work/serve.err" \
  || { cat "$work/serve.err" >&2; fail "keyless serve's summary does not name the miss"; }
grep -m1 'first differing field' "$work/serve.err" | sed 's/^ */  /'

echo "[${SECONDS}s] ai-sdk web: ok (the Playwright suite passes on two workers, the Vitest suite passes; the drifts fail and pass as they must; the official client: 0, then 1 naming the miss)"
