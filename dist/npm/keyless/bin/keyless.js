#!/usr/bin/env node
// The `keyless` command of the npm package: runs the binary of this platform's package (an
// optional dependency, one per platform as biome and esbuild ship theirs, so npm installed only
// the one matching this machine's os, cpu and libc) with this command's arguments, forwards the
// signals it receives, and exits as the binary did. KEYLESS_BINARY names another binary instead.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");
const { platforms } = require("../platforms.json");

// glibc or musl: Node reports the glibc it runs on; a musl build reports none.
function libc() {
  if (process.platform !== "linux") return undefined;
  const header = process.report && process.report.getReport().header;
  return header && header.glibcVersionRuntime ? "glibc" : "musl";
}

function binaryPath() {
  if (process.env.KEYLESS_BINARY) return process.env.KEYLESS_BINARY;
  const here = { os: process.platform, cpu: process.arch, libc: libc() };
  const platform = platforms.find(
    (p) => p.os === here.os && p.cpu === here.cpu && (p.libc === undefined || p.libc === here.libc),
  );
  const name = `${here.os}-${here.cpu}${here.libc ? ` (${here.libc})` : ""}`;
  if (!platform) {
    const known = platforms.map((p) => `${p.os}-${p.cpu}${p.libc ? ` (${p.libc})` : ""}`);
    throw new Error(`no keyless binary is built for ${name}; built for: ${known.join(", ")}`);
  }
  const exe = here.os === "win32" ? "keyless.exe" : "keyless";
  try {
    return path.join(path.dirname(require.resolve(`${platform.package}/package.json`)), "bin", exe);
  } catch {
    throw new Error(
      `the package ${platform.package}, which holds keyless for ${name}, is not installed: ` +
        "install again without --omit=optional or --no-optional",
    );
  }
}

let binary;
try {
  binary = binaryPath();
} catch (err) {
  console.error(`keyless: ${err.message}`);
  process.exit(2);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
// A signal sent to this process alone (a CI timeout, `kill`) reaches the binary too, which then
// stops its gateway; Ctrl-C at a terminal reaches both already, and a second SIGINT is harmless.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const forward = (signal) => {
  if (child.exitCode === null) child.kill(signal);
};
for (const signal of forwarded) process.on(signal, forward);

child.on("error", (err) => {
  console.error(`keyless: cannot run ${binary}: ${err.message}`);
  process.exit(2);
});
// The signals Node leaves at their default action, which kills: re-raised, this process dies of
// the same signal as the binary. Node ignores SIGPIPE and handles SIGUSR1 (it opens the
// inspector), SIGSEGV and others for itself: for those, and any signal not listed, the exit
// status is 128 + the signal's number, what a shell reports for a child killed by it.
const reraised = new Set(["SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGKILL", "SIGABRT",
  "SIGALRM", "SIGUSR2"]);
child.on("exit", (code, signal) => {
  for (const s of forwarded) process.off(s, forward);
  if (!signal) process.exit(code);
  const status = 128 + (os.constants.signals[signal] || 0);
  if (reraised.has(signal)) {
    // Die of the same signal, so the caller sees what the binary saw; a signal sent to this
    // process is delivered before kill returns, so the exit below runs only if it did not kill.
    process.kill(process.pid, signal);
  }
  process.exit(status);
});
