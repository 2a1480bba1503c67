#!/usr/bin/env bash
# Records this example's fixture again, keyless: scripted_upstream.py stands in for a provider
# (vectors of a real dimension, streamed answers), and `keyless record` (keyless.toml) is the
# recording proxy in front of it: it starts the gateway with its models at the proxy, drives the
# question and the follow-up, and writes every call (the embeddings calls too) into the fixture.
# Then `keyless test` leaves a pending golden (`golden/<name>.snap.new`) wherever the golden is
# new or changed: review it (`keyless review`) and commit `fixtures/` and `golden/`.
#
#   KEYLESS=target/debug/keyless PYTHON=target/ci-venv/bin/python examples/rag-gateway/record.sh
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with openai installed}"
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PYTHON" "$here/scripted_upstream.py" --port "$port" &
upstream_pid=$!
trap 'kill "$upstream_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$here"
# --force: recording again replaces the committed fixture, on purpose.
OPENAI_API_KEY=scripted-upstream-needs-none "$keyless" record --force \
  --upstream "http://127.0.0.1:$port/v1" --recording-out "$work/recording.jsonl" \
  --scenario warranty --mode chat --prompt "How long is the warranty on the grinder?" \
  --followup "Can I wash the burrs with water?"
"$keyless" test || true
