// The npm package's launcher (dist/npm/keyless/bin/keyless.js) exits as its binary did: with the
// binary's code, or, when the binary dies of a signal, of the same signal or with 128 + its
// number, never 0, and never by re-raising a signal Node handles itself (SIGUSR1 would open
// Node's inspector, SIGPIPE is ignored). The binary is a stand-in shell script that kills itself.
//
//   node --test dist/tests/
"use strict";

const assert = require("node:assert/strict");
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const test = require("node:test");

const launcher = path.join(__dirname, "..", "npm", "keyless", "bin", "keyless.js");

// The launcher as npm installs it (bin/keyless.js beside platforms.json), and a binary that
// exits with its first argument, or kills itself with the signal it names.
function installed() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyless-launcher-"));
  fs.mkdirSync(path.join(dir, "bin"));
  fs.copyFileSync(launcher, path.join(dir, "bin", "keyless.js"));
  fs.writeFileSync(path.join(dir, "platforms.json"), JSON.stringify({ platforms: [] }));
  const binary = path.join(dir, "stand-in");
  fs.writeFileSync(
    binary,
    '#!/bin/sh\ncase "$1" in\n  SIG*) kill -s "${1#SIG}" $$; sleep 5; exit 99 ;;\n  *) exit "$1" ;;\nesac\n',
  );
  fs.chmodSync(binary, 0o755);
  return { dir, script: path.join(dir, "bin", "keyless.js"), binary };
}

function run(install, arg) {
  return spawnSync(process.execPath, [install.script, arg], {
    env: { ...process.env, KEYLESS_BINARY: install.binary },
    encoding: "utf8",
    timeout: 20_000,
  });
}

test("the binary's exit code is the launcher's", () => {
  const install = installed();
  for (const code of [0, 1, 2, 7]) {
    const result = run(install, String(code));
    assert.equal(result.status, code, `exit ${code}: ${result.stderr}`);
  }
});

// Node ignores SIGPIPE and handles SIGUSR1 (its inspector): re-raising them left the launcher
// alive and exiting 0. The others Node leaves at their default.
const signals = ["SIGPIPE", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT",
  "SIGABRT", "SIGKILL", "SIGSEGV", "SIGALRM"];
for (const signal of signals) {
  test(`a binary dying of ${signal} is seen as ${signal} (died of it, or exit 128 + its number)`, () => {
    const install = installed();
    const result = run(install, signal);
    const number = os.constants.signals[signal];
    const seen = result.signal === signal || result.status === 128 + number;
    assert.ok(
      seen,
      `${signal}: the launcher exited ${result.status} (signal ${result.signal}), expected ` +
        `${signal} or ${128 + number}; stderr: ${result.stderr}`,
    );
    assert.doesNotMatch(result.stderr, /Debugger listening/, `${signal} opened Node's inspector`);
  });
}
