#!/bin/sh
# Playwright's webServer: runs the command given (`keyless serve …` or `keyless record --serve …`)
# and writes its exit status to $SERVE_STATUS when it ends. Playwright stops a webServer by
# signalling its process group and never looks at how it exited, so the status reporter
# (tests/serve-status.ts) reads this file after the teardown and fails the run unless it says 0:
# a model call that missed, or a fixture that could not be built, fails the run.
#
# The trap keeps this shell alive through the signal: it waits for the command, then writes.
trap : TERM INT
mkdir -p "$(dirname "$SERVE_STATUS")"
rm -f "$SERVE_STATUS"
"$@"
echo $? > "$SERVE_STATUS"
