#!/usr/bin/env bash
# The example's pytest suite (tests/) as a user runs it, from a copy of the folder outside the
# workspace, with a Python where `pip install keyless pytest pytest-xdist -r requirements.txt`
# was run (the `keyless` fixture is the wheel's pytest plugin, the command beside the Python):
#   1. green as recorded;
#   2. green with `-n 2`, on two served gateways (one per pytest-xdist worker, per the JUnit
#      report's keyless_gateway_url properties);
#   3. red on a drifted gateway (message names off), with keyless's miss diagnostic in pytest's
#      own failure output.
#
#   PYTHON=/tmp/venv/bin/python examples/python-gateway/check-pytest.sh
set -euo pipefail
python="${PYTHON:?set PYTHON to a Python with keyless, pytest, pytest-xdist and openai installed}"
# Absolute, but not resolved: a venv's python is a link whose target is not the venv.
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$(dirname "$0")"/. "$work"/
rm -rf "$work/.keyless"
cd "$work"

fail() { echo "python example (pytest): $*" >&2; exit 1; }

echo "python example (pytest): pytest in $work"
"$PYTHON" -m pytest -p no:cacheprovider -q > green.out 2>&1 || { cat green.out >&2; fail "pytest failed on the committed fixture"; }
grep -q '2 passed' green.out || { cat green.out >&2; fail "pytest did not run the two tests"; }

echo "python example (pytest): pytest -n 2 runs on two served gateways"
"$PYTHON" -m pytest -p no:cacheprovider -q -n 2 --junitxml=xdist.xml > xdist.out 2>&1 ||
  { cat xdist.out >&2; fail "pytest -n 2 failed on the committed fixture"; }
"$PYTHON" - xdist.xml <<'PY' || { cat xdist.out >&2; fail "pytest -n 2 did not use one gateway per worker"; }
import sys, xml.etree.ElementTree as ET
cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
props = [{p.get("name"): p.get("value") for p in case.iter("property")} for case in cases]
by_worker = {p["keyless_worker"]: p["keyless_gateway_url"] for p in props}
print(f"python example (pytest): workers and their gateways: {by_worker}")
assert len(cases) == 2 and not list(ET.parse(sys.argv[1]).getroot().iter("failure")), cases
assert sorted(by_worker) == ["gw0", "gw1"], by_worker
assert len(set(by_worker.values())) == 2, by_worker
PY

echo "python example (pytest): the same gateway with message names off must fail, naming the miss"
set +e
GATEWAY_SEND_NAMES=0 "$PYTHON" -m pytest -p no:cacheprovider > drift.out 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat drift.out >&2; fail "pytest on a drifted gateway exited $status, not 1"; }
grep -q 'ERROR at teardown of test_answers_each_question_with_the_tools_count' drift.out ||
  { cat drift.out >&2; fail "the drifted test did not fail at teardown"; }
grep -q 'first differing field: \[0\]\.name: recorded "user-input", incoming <missing>' drift.out ||
  { cat drift.out >&2; fail "pytest's output has no miss diagnostic"; }
grep -m1 'first differing field' drift.out
echo "python example (pytest): ok (green; -n 2 on two gateways; the drift fails with its diagnostic)"
