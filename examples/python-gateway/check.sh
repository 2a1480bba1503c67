#!/usr/bin/env bash
# The example as a user runs it, from a folder outside the workspace (a copy of this one, no
# Cargo.toml in sight): the committed goldens pass (the fixture and its two fault scenarios: a
# 429 the gateway's client retries through, a cut stream it turns into an `error` event), the
# 429 scenario without the client's retries fails with a golden change in seconds (not a hang),
# and a gateway whose conversation drifts (message names off) fails with the miss diagnostic in
# the output and in --json; `keyless drift` against the scripted upstream the fixture was recorded
# with reports it identical.
#
#   KEYLESS=target/debug/keyless PYTHON=target/ci-venv/bin/python examples/python-gateway/check.sh
#
# CHECK=installed runs only the two checks an installed copy of the same keyless owes (green as
# recorded, red with the diagnostic on the drift): dist/check-installs.sh runs it per package,
# after this whole script has run on the build the packages hold.
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with openai installed}"
# Absolute, but not resolved: a venv's python is a link whose target is not the venv.
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$(dirname "$0")"/. "$work"/
rm -rf "$work/.keyless"
cd "$work"

fail() { echo "python example: $*" >&2; exit 1; }

echo "python example: keyless test in $work"
"$keyless" test || fail "keyless test failed on the committed fixture and golden"

drifted_gateway_misses() {
  set +e
  GATEWAY_SEND_NAMES=0 "$keyless" test > drift.out 2>&1
  local status=$?
  set -e
  [ "$status" -eq 1 ] || fail "a drifted gateway exited $status, not 1"
  grep -q 'first differing field: \[0\].name' drift.out || fail "no miss diagnostic in the output"
}
case "${CHECK:-all}" in
  all) ;;
  installed)
    echo "python example: the same gateway with message names off must miss"
    drifted_gateway_misses
    echo "python example: ok (installed: passes as recorded; the drift fails with its diagnostic)"
    exit 0
    ;;
  *) fail "CHECK=${CHECK} is neither all nor installed" ;;
esac

echo "python example: without its client's retries the gateway fails the 429 fault scenario"
set +e
started=$SECONDS
GATEWAY_MAX_RETRIES=0 "$keyless" test word_count.flash@rate-limit > noretry.out 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || fail "the 429 scenario without retries exited $status, not 1: $(cat noretry.out)"
[ $((SECONDS - started)) -lt 60 ] || fail "the 429 scenario without retries took $((SECONDS - started))s (a hang?)"
grep -q 'faults: call 1: status 429 fired 1/1' noretry.out || fail "the verdict does not say the 429 fired"
grep -q 'golden: .*word_count.flash@rate-limit.snap (changed)' noretry.out ||
  fail "the 429 scenario without retries shows no golden change: $(cat noretry.out)"

echo "python example: a 40 s delay against a client that waits 5 s costs about 5 s, not 40"
cat > fixtures/word_count.flash@slow.faults.toml <<'TOML'
fixture = "word_count.flash"
[[fault]]
turn = 4
kind = "delay"
first_byte_ms = 40000
TOML
# The client gives up, and the gateway streams the error event the cut stream's golden holds.
sed 's/@cut-stream/@slow/' golden/word_count.flash@cut-stream.snap > golden/word_count.flash@slow.snap
started=$SECONDS
GATEWAY_MODEL_TIMEOUT=5 GATEWAY_MAX_RETRIES=0 "$keyless" test word_count.flash@slow > slow.out 2>&1 ||
  fail "the delayed scenario failed: $(cat slow.out)"
took=$((SECONDS - started))
echo "python example: the 40 s delay took ${took}s of wall time"
[ "$took" -lt 20 ] || fail "a 40 s delay against a 5 s client timeout took ${took}s"
rm fixtures/word_count.flash@slow.faults.toml golden/word_count.flash@slow.snap

echo "python example: a fault no call matches fails its fixture (the gateway took another path)"
cat > fixtures/word_count.flash@never.faults.toml <<'TOML'
fixture = "word_count.flash"
[[fault]]
call = 99
kind = "status"
status = 503
TOML
cp golden/word_count.flash@rate-limit.snap golden/word_count.flash@never.snap
set +e
"$keyless" test word_count.flash@never > never.out 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || fail "a fault that never fired exited $status, not 1: $(cat never.out)"
grep -q 'fault_not_fired: the fault "call 99: status 503"' never.out ||
  fail "the verdict does not name the fault that never fired: $(cat never.out)"
rm fixtures/word_count.flash@never.faults.toml golden/word_count.flash@never.snap

echo "python example: the same gateway with message names off must miss"
drifted_gateway_misses
set +e
GATEWAY_SEND_NAMES=0 "$keyless" test --json > drift.json 2> drift.err
json=$?
set -e
[ "$json" -eq 1 ] || fail "a drifted gateway exited $json with --json, not 1"
grep -q 'first differing field: \[0\]\.name' drift.json || fail "no miss diagnostic in --json"
[ ! -e golden/word_count.flash.snap.new ] || fail "a run that missed left a pending golden"
echo "python example: keyless drift against the scripted upstream must find nothing changed"
port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PYTHON" scripted_upstream.py --port "$port" 2> upstream.log &
upstream=$!
trap 'kill "$upstream" 2>/dev/null || true; rm -rf "$work"' EXIT
"$PYTHON" - "$port" <<'PY' || fail "the scripted upstream did not start: $(cat upstream.log)"
import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
OPENAI_API_KEY=sk-scripted-upstream-needs-none "$keyless" drift --json --report drift.md \
  --upstream "http://127.0.0.1:$port/v1" > drift-run.json 2> drift-run.err ||
  fail "keyless drift exited $? against the scripted upstream: $(cat drift-run.json drift-run.err)"
"$PYTHON" - drift-run.json <<'PY' || fail "keyless drift: not identical: $(cat drift-run.json)"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
assert [(l["fixture"], l["verdict"], l["changes"]) for l in lines] == [
    ("word_count.flash", "identical", [])], lines
PY
grep -q '| `word_count.flash` | identical |' drift.md || fail "no drift report: $(cat drift.md)"
kill "$upstream"
echo "python example: 8 copies of the fixture, two at once, with a JUnit report"
mkdir -p many/fixtures many/golden
for i in 1 2 3 4 5 6 7 8; do
  cp fixtures/word_count.flash.json "many/fixtures/word_count_$i.flash.json"
  cp golden/word_count.flash.snap "many/golden/word_count_$i.flash.snap"
done
"$keyless" test --fixtures many/fixtures --golden many/golden --jobs 2 --json \
  --junit many/keyless.xml > many.json || fail "--jobs 2 on 8 copies failed: $(cat many.json)"
"$PYTHON" - many.json many/keyless.xml <<'PY' || fail "--jobs 2 on 8 copies: unexpected outcome"
import json, sys, xml.etree.ElementTree as ET
lines = [json.loads(line) for line in open(sys.argv[1])]
names = [line["fixture"].rsplit("/", 1)[1] for line in lines]
assert names == [f"word_count_{i}.flash.json" for i in range(1, 9)], names
assert all(not line["misses"] and line["golden"] == "ok" for line in lines), lines
cases = ET.parse(sys.argv[2]).getroot().iter("testcase")
assert [case.get("name") for case in cases] == [n[:-len(".json")] for n in names]
assert not list(ET.parse(sys.argv[2]).getroot().iter("failure"))
PY
echo "python example: ok (passes as recorded and under its faults; no retry fails the 429; the drift fails with its diagnostic; keyless drift finds nothing changed; 8 at two a time pass)"
