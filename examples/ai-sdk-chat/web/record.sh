#!/usr/bin/env bash
# Records this suite's fixtures again, through the browser: ../scripted_upstream.mjs stands in for
# a provider, and for each scenario the suite runs in record mode (RECORD_SCENARIO): its webServer
# is `keyless record --serve` (the recording proxy in front of the upstream, and the chat route
# serving the built page), the test tagged `@record:<scenario>` drives the page, and at the
# webServer's SIGTERM the fixture `fixtures/<scenario>.chat.json` is built from the model calls
# the page caused, its prompts taken from the user messages they carried. Commit `fixtures/`.
#
#   KEYLESS=target/debug/keyless examples/ai-sdk-chat/web/record.sh   # after npm ci here and in ..
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export KEYLESS="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}
port="$(free_port)"
node "$here/../scripted_upstream.mjs" --port "$port" &
upstream_pid=$!
trap 'kill "$upstream_pid" 2>/dev/null' EXIT
cd "$here"
npm run --silent build
export RECORD_UPSTREAM="http://127.0.0.1:$port/v1" OPENAI_API_KEY=scripted-upstream-needs-none
export AISDK_WEB_PORT="${AISDK_WEB_PORT:-$(free_port)}" AISDK_MODEL_PORT="${AISDK_MODEL_PORT:-$(free_port)}"
for scenario in hello paris; do
  rm -f "fixtures/$scenario.chat.json"
  RECORD_SCENARIO="$scenario" npx playwright test
  [ -s "fixtures/$scenario.chat.json" ] || { echo "record.sh: no fixtures/$scenario.chat.json" >&2; exit 1; }
done
echo "record.sh: recorded through the browser: $(ls fixtures)"
