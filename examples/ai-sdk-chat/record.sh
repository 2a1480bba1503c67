#!/usr/bin/env bash
# Records this example's fixture again, keyless: scripted_upstream.mjs stands in for a provider,
# and `keyless record --api ai-sdk` (keyless.toml) is the recording proxy in front of it, starts
# the chat route with its model at the proxy, and drives the prompt and the follow-up as useChat
# would. Then `keyless test` leaves a pending golden (`golden/<name>.snap.new`) wherever the
# golden is new or changed: review it (`keyless review`) and commit `fixtures/` and `golden/`.
#
#   KEYLESS=target/debug/keyless examples/ai-sdk-chat/record.sh    # after `npm ci` here
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
node "$here/scripted_upstream.mjs" --port "$port" &
upstream_pid=$!
trap 'kill "$upstream_pid" 2>/dev/null; rm -rf "$work"' EXIT
cd "$here"
# --force: recording again replaces the committed fixtures, on purpose.
OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force \
  --upstream "http://127.0.0.1:$port/v1" --recording-out "$work/weather/recording.jsonl" \
  --scenario weather --mode chat --prompt "What is the weather in Paris?" \
  --followup "And in Lisbon?"
"$keyless" test || true
# The same agent as an OpenAI-style endpoint, one fixture folder and golden folder per dialect.
for api in openai-chat openai-responses; do
  OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force --api "$api" \
    --fixtures "fixtures-$api" --upstream "http://127.0.0.1:$port/v1" \
    --recording-out "$work/$api/recording.jsonl" \
    --scenario weather --mode chat --prompt "What is the weather in Paris?" \
    --followup "And in Lisbon?"
  "$keyless" test --api "$api" --fixtures "fixtures-$api" --golden "golden-$api" || true
done
