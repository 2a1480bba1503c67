#!/usr/bin/env bash
# Records this example's fixture again, keyless: scripted_upstream.mjs stands in for a provider,
# and `keyless record --api ai-sdk` (keyless.toml) is the recording proxy in front of it, starts
# the chat route with its model at the proxy, and drives the prompt and the follow-up as useChat
# would. Then `keyless test` leaves a pending golden (`golden/<name>.snap.new`) wherever the
# golden is new or changed: review it (`keyless review`) and commit `fixtures/` and `golden/`.
#
# The clock route's fixture (clock.keyless.toml) is recorded against its real MCP server,
# mcp_server.py, which PYTHON (a Python with `mcp==1.26.0`) runs on the port [mcp.clock] names.
#
#   KEYLESS=target/debug/keyless PYTHON=target/mcp-venv/bin/python examples/ai-sdk-chat/record.sh
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with mcp==1.26.0 for the clock route MCP server}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
node "$here/scripted_upstream.mjs" --port "$port" &
upstream_pid=$!
"$python" "$here/mcp_server.py" http 8932 >"$work/mcp_server.log" 2>&1 &
mcp_pid=$!
trap 'kill "$upstream_pid" "$mcp_pid" 2>/dev/null; rm -rf "$work"' EXIT
# Bounded wait for the MCP server's port.
node -e 'const net = require("net"); let left = 80;
  const again = () => net.connect(8932, "127.0.0.1").on("connect", () => process.exit(0))
    .on("error", () => (--left ? setTimeout(again, 250) : process.exit(1)));
  again()' || { cat "$work/mcp_server.log" >&2; exit 1; }
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
# The clock route: its MCP tool recorded through keyless against the real server.
OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force --config clock.keyless.toml \
  --upstream "http://127.0.0.1:$port/v1" --recording-out "$work/clock/recording.jsonl" \
  --scenario clock --mode chat --prompt "What time is it in Paris?"
"$keyless" test --config clock.keyless.toml || true
