// The GitHub Action's step (dist/action/run.sh) hands `keyless test` every argument of its
// `args` input, split on spaces, tabs and newlines (YAML's `args: |` block gives one per line),
// and refuses quotes, which it does not interpret, naming the input. `KEYLESS_PYTHON` is a
// stand-in: its `-m venv DIR` makes DIR/bin/python (itself, whose `pip install` does nothing)
// and DIR/bin/keyless, which prints its arguments one per line.
//
//   node --test dist/tests/
"use strict";

const assert = require("node:assert/strict");
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const test = require("node:test");

const script = path.join(__dirname, "..", "action", "run.sh");

const standInPython = `#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  cp "$0" "$3/bin/python"
  printf '#!/bin/sh\\n[ "$1" = --version ] && { echo "keyless 0.0.0"; exit 0; }\\nfor a in "$@"; do echo "arg:$a"; done\\n' > "$3/bin/keyless"
  chmod +x "$3/bin/keyless"
fi
exit 0
`;

function action(args) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyless-action-"));
  const python = path.join(dir, "python");
  fs.writeFileSync(python, standInPython);
  fs.chmodSync(python, 0o755);
  const result = spawnSync("bash", [script], {
    env: {
      ...process.env,
      KEYLESS_PYTHON: python,
      KEYLESS_PACKAGE: "keyless",
      KEYLESS_ARGS: args,
      KEYLESS_WORKING_DIRECTORY: dir,
      RUNNER_TEMP: dir,
    },
    encoding: "utf8",
    timeout: 20_000,
  });
  const received = result.stdout
    .split("\n")
    .filter((line) => line.startsWith("arg:"))
    .map((line) => line.slice(4));
  return { ...result, received };
}

const cases = [
  ["no arguments", "", ["test"]],
  ["one line", "--json --jobs 2", ["test", "--json", "--jobs", "2"]],
  ["a YAML block of three lines", "--json\nword_count.flash\n--jobs 2\n",
    ["test", "--json", "word_count.flash", "--jobs", "2"]],
  ["tabs, CRs and blank lines", "\t--json\r\n\n  a.flash\tb.flash  \n",
    ["test", "--json", "a.flash", "b.flash"]],
  ["a glob character is not expanded", "*.flash", ["test", "*.flash"]],
];
for (const [name, args, expected] of cases) {
  test(`args: ${name}`, () => {
    const result = action(args);
    assert.equal(result.status, 0, `${name}: exit ${result.status}: ${result.stderr}`);
    assert.deepEqual(result.received, expected, name);
  });
}

test("args with a quote are refused, naming the input", () => {
  for (const args of [`--filter "a b"`, "it's", "back\\slash"]) {
    const result = action(args);
    assert.equal(result.status, 2, `${args}: exit ${result.status}`);
    assert.match(result.stderr, /keyless action: args/, args);
    assert.deepEqual(result.received, [], `${args}: keyless ran`);
  }
});
