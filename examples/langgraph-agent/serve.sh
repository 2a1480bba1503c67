# Sourced by check.sh and record.sh: start `langgraph dev` for this example and wait for it,
# bounded, reading the address it prints (it serves on another port without failing when the
# asked one is taken).
#
#   serve_langgraph FOLDER PORT MODEL_BASE_URL LOG   # sets LANGGRAPH_URL and LANGGRAPH_PID
#
# The server is started once, before keyless's model server, so it gets the MCP stand-ins that
# `keyless test` would give a gateway it starts itself (keyless.toml's [mcp.*]): the route of each
# server on the model server, and `$KEYLESS mcp-stdio --url <route>` for the stdio one.

# A free port on 127.0.0.1 (any port is free in a fresh network namespace).
free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

serve_langgraph() {
  local folder="$1" port="$2" model="$3" log="$4" waited=0 limit="${LANGGRAPH_READY_SECS:-90}"
  local langgraph
  langgraph="$(dirname "$PYTHON")/langgraph"
  [ -x "$langgraph" ] || { echo "no langgraph beside $PYTHON (pip install -r requirements.txt)" >&2; return 1; }
  # Telemetry and the version check off: replay must not touch the network.
  local root="${model%/v1}"
  (cd "$folder" && KEYLESS_MCP_URL_CLOCK_HTTP="$root/_keyless/mcp/clock-http" \
    KEYLESS_MCP_CMD_CLOCK="'${KEYLESS:-keyless}' mcp-stdio --url $root/_keyless/mcp/clock" \
    LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true \
    OPENAI_BASE_URL="$model" OPENAI_API_KEY=unused AGENT_WORKSPACE="$folder/workspace" \
    exec "$langgraph" dev --no-browser --no-reload --host 127.0.0.1 --port "$port" >"$log" 2>&1) &
  LANGGRAPH_PID=$!
  LANGGRAPH_URL=""
  while [ "$waited" -lt $((limit * 4)) ]; do
    if ! kill -0 "$LANGGRAPH_PID" 2>/dev/null; then
      echo "langgraph dev exited before it was ready; its log ($log):" >&2
      cat "$log" >&2
      return 1
    fi
    if [ -z "$LANGGRAPH_URL" ] && [ -f "$log" ]; then
      # The banner colours the address: strip the escapes first.
      LANGGRAPH_URL="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -o 'API: http://127\.0\.0\.1:[0-9]*' | head -1 | sed 's/^API: //' || true)"
    fi
    if [ -n "$LANGGRAPH_URL" ] && "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/ok", timeout=2)' "$LANGGRAPH_URL" 2>/dev/null; then
      return 0
    fi
    sleep 0.25
    waited=$((waited + 1))
  done
  echo "langgraph dev was not ready at ${LANGGRAPH_URL:-the port it prints} within ${limit} s; its log ($log):" >&2
  cat "$log" >&2
  return 1
}

stop_langgraph() {
  if [ -n "${LANGGRAPH_PID:-}" ]; then
    kill "$LANGGRAPH_PID" 2>/dev/null || true
    wait "$LANGGRAPH_PID" 2>/dev/null || true
    LANGGRAPH_PID=""
  fi
}
