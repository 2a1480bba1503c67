#!/usr/bin/env bash
# The search tool (issue 40): the example gateway with GATEWAY_SEARCH=1, whose agent searches
# through tavily-python's TavilyClient, recorded against a scripted upstream that answers like
# Tavily (scripted_tavily.py) and replayed with that upstream stopped, once by base URL
# (TAVILY_BASE_URL={http_url:tavily}) and once through the forward-proxy mode ([proxy] hosts, the
# client left at https://api.tavily.com). For each mode two recordings whose upstream answered
# differently each replay twice, passing their accepted golden both times (the gateway's stream
# is the same, byte for byte, after normalisation), and the two goldens differ; no file written
# holds the Tavily key.
#
#   KEYLESS=target/debug/keyless PYTHON=target/ci-venv/bin/python examples/python-gateway/check-search.sh
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with openai and tavily-python installed}"
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
cp -r "$(dirname "$0")"/. "$work"/
rm -rf "$work/.keyless" "$work"/fixtures/* "$work"/golden/*
cd "$work"

fail() { echo "python example (search): $*" >&2; exit 1; }
free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { # <port>: until something listens there
  for _ in $(seq 100); do
    "$PYTHON" -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return
    sleep 0.1
  done
  fail "nothing listens on port $1"
}

# replayed <file>: one run through `keyless serve` (a fresh replay of the fixture, the upstream
# stopped), driven by tests/client.py; its last `values` frame's messages (type, content) in
# <file>, as JSON. Ids are left out: the gateway makes them up at every run.
replayed() {
  rm -f serve.out # not the last replay's: the new one may not have truncated it yet
  "$keyless" serve > serve.out 2> serve.err & serve=$!
  for _ in $(seq 600); do [ -s serve.out ] && break; sleep 0.1; done
  url=$("$PYTHON" -c 'import json; print(json.loads(open("serve.out").readline())["gateway_url"])') ||
    fail "keyless serve printed no gateway URL: $(cat serve.out serve.err)"
  "$PYTHON" - "$url" > "$1" <<'PY' || fail "the replayed run failed: $(cat serve.err)"
import json, sys
sys.path.insert(0, "tests")
from client import Gateway
gateway = Gateway(sys.argv[1])
messages = gateway.run(gateway.new_thread(), "Search the web for 'weather in Paris'")
print(json.dumps([[message["type"], message["content"]] for message in messages], ensure_ascii=False))
PY
  kill -TERM "$serve"
  wait "$serve" || fail "keyless serve reported a problem: $(cat serve.err)"
}

# The key the gateway's search client sends; it must reach no file.
export TAVILY_API_KEY="tvly-example-Qm7Zr2Wx9Lp4Kd8Vn3"
export OPENAI_API_KEY="unused-scripted-upstream"
model_port=$(free_port)
"$PYTHON" scripted_upstream.py --port "$model_port" & pids+=($!)
wait_port "$model_port"

for mode in base-url proxy; do
  for answer in "Sunny, 21 °C" "Rain, 12 °C"; do
    tavily_port=$(free_port)
    "$PYTHON" scripted_tavily.py --port "$tavily_port" --answer "$answer" & tavily=$!
    pids+=($tavily)
    wait_port "$tavily_port"
    if [ "$mode" = base-url ]; then
      search='TAVILY_BASE_URL={http_url:tavily} '
      proxy=''
    else
      search=''
      proxy=$'\n[proxy]\nhosts = ["api.tavily.com"]\n'
    fi
    # proxy_host: the client calls api.tavily.com, recording forwards to the scripted upstream.
    cat > keyless.toml <<TOML
fixtures = "fixtures"
golden = "golden"
gateway_cmd = "GATEWAY_SEARCH=1 ${search}exec \${PYTHON:-python3} gateway.py"
ready = "/health"
ready_timeout_secs = 60
api = "deerflow"
logs = ".keyless/logs"

[http.tavily]
upstream = "http://127.0.0.1:$tavily_port"
proxy_host = "api.tavily.com"
$proxy
TOML
    echo "python example (search, $mode): recording against an upstream answering \"$answer\""
    "$keyless" record --force --scenario search --mode flash \
      --prompt "Search the web for 'weather in Paris'" \
      --upstream "http://127.0.0.1:$model_port/v1" > record.out 2>&1 ||
      fail "keyless record ($mode) failed: $(cat record.out)"
    grep -q '"boundary": "http"' fixtures/search.flash.json || fail "the fixture holds no HTTP exchange"
    kill "$tavily"; wait "$tavily" 2>/dev/null || true
    rm -rf golden/*
    set +e
    "$keyless" test > first.out 2>&1
    status=$?
    set -e
    [ "$status" -eq 1 ] || fail "the first replay ($mode) exited $status, not 1 (no golden yet): $(cat first.out)"
    "$keyless" accept > /dev/null || fail "keyless accept failed"
    "$keyless" test > replay.out 2>&1 || fail "the replay ($mode, upstream stopped) failed: $(cat replay.out)"
    # The golden holds the stream's shape; its content, through keyless serve, twice.
    for replay in 1 2; do
      replayed "$mode-${answer%%,*}-$replay.json"
    done
    cmp "$mode-${answer%%,*}-1.json" "$mode-${answer%%,*}-2.json" ||
      fail "two replays of one recording ($mode) streamed different messages"
    grep -qF "The search says: Weather: $answer" "$mode-${answer%%,*}-1.json" ||
      fail "the stream does not carry the search's answer: $(cat "$mode-${answer%%,*}-1.json")"
  done
  cmp -s "$mode-Sunny-1.json" "$mode-Rain-1.json" &&
    fail "the two recordings ($mode) streamed the same: the upstream's answers did not reach the gateway"
done

echo "python example (search): a search of a host not in [proxy] hosts fails the run, named"
sed -i 's/^hosts = .*/hosts = ["api.tavily.com"]/' keyless.toml
sed -i 's|exec \${PYTHON|TAVILY_BASE_URL=https://api.search.brave.com exec ${PYTHON|' keyless.toml
set +e
"$keyless" test > unlisted.out 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || fail "a search of an unlisted host exited $status, not 1: $(cat unlisted.out)"
grep -q 'the host "api.search.brave.com" is not listed in \[proxy\] hosts' unlisted.out ||
  fail "the failure does not name the host: $(cat unlisted.out)"

for form in "$TAVILY_API_KEY" "$(printf %s "$TAVILY_API_KEY" | base64)" \
  "$("$PYTHON" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$TAVILY_API_KEY")"; do
  # Every file written (fixtures, goldens, logs, outputs), this script aside.
  if grep -rqF --exclude=check-search.sh -- "$form" .; then
    fail "the Tavily key is in $(grep -rlF --exclude=check-search.sh -- "$form" .)"
  fi
done
echo "python example (search): ok (recorded and replayed by base URL and through the proxy, two replays alike, each recording's answer in its stream, an unlisted host named, no key written)"
