#!/usr/bin/env bash
# Records this example's fixtures again, keyless: the scripted upstream stands in for a provider,
# `keyless record` is the recording proxy in front of it, and one `langgraph dev` serves the
# graphs with its model at the proxy. Runs in a fresh network namespace with only loopback when
# the machine allows it (`unshare -n`). Then it replays the new fixtures through the same server
# in both stream-mode sets, which leaves a pending golden (`<name>.snap.new`) wherever a golden is
# new or changed: review them (`keyless review`, `keyless review --golden golden-web`) and commit
# `fixtures/`, `golden/` and `golden-web/`.
#
#   KEYLESS=target/debug/keyless PYTHON=target/venv-lg/bin/python examples/langgraph-agent/record.sh
set -euo pipefail
if [ -z "${KEYLESS_NETNS:-}" ] && command -v ip >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
  KEYLESS_NETNS=1 exec unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
export KEYLESS="$keyless"
python="${PYTHON:?set PYTHON to a Python with requirements.txt installed}"
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/serve.sh"
work="$(mktemp -d)"
upstream_pid=""
mcp_pid=""
trap 'stop_langgraph; for pid in $upstream_pid $mcp_pid; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"' EXIT

upstream_port="$(free_port)"
model_port="$(free_port)"
"$PYTHON" "$here/scripted_upstream.py" --port "$upstream_port" &
upstream_pid=$!
# The real MCP server behind keyless.toml's [mcp.clock-http] (its url names this port); the stdio
# one, [mcp.clock], `keyless record` starts per session.
"$PYTHON" "$here/mcp_server.py" http 8931 >"$work/mcp_server.log" 2>&1 &
mcp_pid=$!
serve_langgraph "$here" "$(free_port)" "http://127.0.0.1:$model_port/v1" "$work/langgraph.log"
echo "langgraph dev at $LANGGRAPH_URL"

# --force: recording again replaces the committed fixtures, on purpose.
record() {
  OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force --gateway-url "$LANGGRAPH_URL" \
    --model-port "$model_port" --upstream "http://127.0.0.1:$upstream_port/v1" \
    --recording-out "$work/$1/recording.jsonl" --scenario "$1" --mode flash "${@:2}"
}
cd "$here"
record write_read --prompt "Write 'hello keyless' to notes.txt, then read it back." \
  --followup "Now read missing.txt."
record review --prompt "Should we ship on Friday?"
# The provider refuses this one: the fixture records the model error, and the server's `error`
# frame is then what the golden expects.
record model_error --prompt "Summarise the whole archive in one line."
# The clock graphs call their MCP server through keyless, over stdio and over Streamable HTTP:
# each fixture records the JSON-RPC exchanges too (and `<fixture>.mcp.snap` the server's tools).
record clock_stdio --prompt "What time is it in Paris?"
record clock_http --prompt "What time is it in Paris?"
for modes in "--stream-modes values" "--stream-modes web --golden golden-web"; do
  # shellcheck disable=SC2086 # two flags (and their values) per set
  "$keyless" test --gateway-url "$LANGGRAPH_URL" --model-port "$model_port" $modes || true
done
rm -rf "$here/workspace" "$here/.langgraph_api"
