#!/usr/bin/env bash
# Records this example's fixture again, keyless: the scripted upstream stands in for a provider,
# and `keyless record --api ag-ui` (keyless.toml) is the recording proxy in front of it: it starts
# the agent with its model at the proxy, drives the prompt and the follow-up as AG-UI's client
# does (the follow-up carries the messages and state of the first run), and builds
# fixtures/shopping.chat.json; then fixtures/model_error.chat.json, whose call the upstream refuses
# (a 400, recorded as the turn's `error`: the agent's RUN_ERROR is then what its golden expects).
# Then `keyless test` finds the goldens missing and leaves `<name>.snap.new` beside them: review
# them (`keyless review`) and commit fixtures/ and golden/.
#
#   KEYLESS=target/debug/keyless PYTHON=target/agui-venv/bin/python examples/ag-ui-agent/record.sh [FOLDER]
#
# FOLDER (default: this one) is the copy of the example to record in; check.sh records in a
# temporary copy.
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with requirements.txt installed}"
# Absolute, but not resolved: a venv's python is a link whose target is not the venv.
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
here="$(cd "${1:-$(dirname "$0")}" && pwd)"
work="$(mktemp -d)"
upstream_pid=""
trap '[ -z "$upstream_pid" ] || kill "$upstream_pid" 2>/dev/null; rm -rf "$work"' EXIT

upstream_port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PYTHON" "$here/scripted_upstream.py" --port "$upstream_port" &
upstream_pid=$!
# Bounded wait until it listens (a few tenths of a second).
"$PYTHON" - "$upstream_port" <<'PY'
import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("the scripted upstream did not listen within 10 s")
PY

cd "$here"
# --force: recording again replaces the committed fixtures, on purpose.
record() {
  OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force \
    --upstream "http://127.0.0.1:$upstream_port/v1" --recording-out "$work/$1/recording.jsonl" \
    --scenario "$1" --mode chat "${@:2}"
}
record shopping --prompt "Put 'milk' on my shopping list." --followup "Add 'eggs' too."
record model_error --prompt "Put the whole archive on my list."
