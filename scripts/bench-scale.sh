#!/usr/bin/env bash
# `keyless test` at scale, timed: the Python example's fixture as 8 copies (8 names, 8 goldens)
# and the LangGraph example's fixtures, each run serially (--jobs 1), two at once (--jobs 2) and
# through one gateway per job (--reuse-gateway). The configurations are interleaved, REPS rounds
# of all of them, so a machine whose load changes during the benchmark weighs on each alike; the
# load average before each run is printed beside its time. Every run must pass (no miss, every
# golden ok): a fast failure is no result.
#
#   KEYLESS=target/debug/keyless PYTHON=target/ci-venv/bin/python \
#     LANGGRAPH_PYTHON=target/langgraph-venv/bin/python scripts/bench-scale.sh [REPS]
#
# Without LANGGRAPH_PYTHON only the Python example is timed. Prints one line per run, then the
# median of each configuration and its speed-up over the serial run.
set -euo pipefail
reps="${1:-3}"
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
python="$(abs "${PYTHON:?set PYTHON to a Python with examples/python-gateway/requirements.txt}")"
lg_python="${LANGGRAPH_PYTHON:+$(abs "$LANGGRAPH_PYTHON")}"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The Python example with its one fixture as 8.
mkdir -p "$work/python"
cp -r "$here/examples/python-gateway"/. "$work/python"/
rm -rf "$work/python/.keyless"
for i in 1 2 3 4 5 6 7 8; do
  cp "$work/python/fixtures/word_count.flash.json" "$work/python/fixtures/word_count_$i.flash.json"
  cp "$work/python/golden/word_count.flash.snap" "$work/python/golden/word_count_$i.flash.snap"
done
rm "$work/python/fixtures/word_count.flash.json" "$work/python/golden/word_count.flash.snap"

# The LangGraph example, with its own gateway_cmd (each `langgraph dev` a workspace of its own).
if [ -n "$lg_python" ]; then
  mkdir -p "$work/langgraph"
  cp -r "$here/examples/langgraph-agent"/. "$work/langgraph"/
  rm -rf "$work/langgraph/.keyless" "$work/langgraph/.langgraph_api" "$work/langgraph/workspace"
fi

results="$work/results"
: > "$results"
# run <example> <config> <keyless test flags...>
run() {
  local example="$1" config="$2" load started elapsed status overlap
  shift 2
  load="$(cut -d' ' -f1 /proc/loadavg)"
  started="$(date +%s%N)"
  set +e
  case "$example" in
    python) (cd "$work/python" && PYTHON="$python" "$keyless" test --json "$@") > "$work/out.json" 2> "$work/err" ;;
    langgraph) (cd "$work/langgraph" && LANGGRAPH="$(dirname "$lg_python")/langgraph" \
      "$keyless" test --json "$@") > "$work/out.json" 2> "$work/err" ;;
  esac
  status=$?
  set -e
  elapsed="$(( ($(date +%s%N) - started) / 1000000 ))"
  # Every fixture ran, none missed, every golden ok.
  if [ "$status" -ne 0 ] || grep -qv '"golden":"ok"' "$work/out.json" || grep -q '"misses":\[{' "$work/out.json"; then
    echo "bench-scale: $example $config failed (exit $status):" >&2
    cat "$work/out.json" "$work/err" >&2
    exit 1
  fi
  # How many fixtures ran at once on average: their summed times over the wall time (a
  # machine whose cores are busy with other work gives two at once no more CPU, so this shows
  # what keyless overlapped even when the wall time cannot show it).
  overlap="$("$python" -c 'import json, sys; print(round(sum(json.loads(l)["elapsed_ms"] for l in open(sys.argv[1])) / int(sys.argv[2]), 2))' "$work/out.json" "$elapsed")"
  printf '%-10s %-8s %7d ms  load %-5s  at once %-4s (%s fixtures)\n' "$example" "$config" \
    "$elapsed" "$load" "$overlap" "$(wc -l < "$work/out.json")"
  echo "$example $config $elapsed" >> "$results"
}

echo "bench-scale: $reps rounds on $(nproc) cores"
for round in $(seq "$reps"); do
  run python serial --jobs 1
  run python jobs2 --jobs 2
  run python reuse --jobs 1 --reuse-gateway
  run python reuse2 --jobs 2 --reuse-gateway
  if [ -n "$lg_python" ]; then
    run langgraph serial --jobs 1
    run langgraph jobs2 --jobs 2
    run langgraph reuse --jobs 1 --reuse-gateway
    run langgraph reuse2 --jobs 2 --reuse-gateway
  fi
done

echo "median of $reps (speed-up over serial):"
"$python" - "$results" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    example, config, millis = line.split()
    times.setdefault(example, {}).setdefault(config, []).append(int(millis) / 1000)
for example, configs in times.items():
    serial = statistics.median(configs["serial"])
    for config, values in configs.items():
        median = statistics.median(values)
        print(f"{example:<10} {config:<8} {median:7.2f} s  x{serial / median:.2f}  "
              f"(runs: {', '.join(f'{v:.2f}' for v in values)})")
PY
