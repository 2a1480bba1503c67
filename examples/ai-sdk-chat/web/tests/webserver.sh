#!/bin/sh
# Playwright's webServer while recording (record.sh; replaying, keyless/playwright runs `keyless
# serve` per worker itself): runs the command given (`keyless record --serve …`)
# and writes its exit status to $SERVE_STATUS when it ends. Playwright stops a webServer by
# signalling its process group and never looks at how it exited, so the status reporter
# (tests/serve-status.ts) reads this file after the teardown and fails the run unless it says 0:
# a fixture that could not be built fails the run.
#
# The trap keeps this shell alive through the signal: it waits for the command, then writes.
trap : TERM INT
mkdir -p "$(dirname "$SERVE_STATUS")"
rm -f "$SERVE_STATUS"
"$@"
echo $? > "$SERVE_STATUS"
