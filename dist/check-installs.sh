#!/usr/bin/env bash
# What .ci/run runs after `cargo xtask dist`: the packages in <dist folder> install and work the
# way a user installs them, with no Rust toolchain on PATH (every PATH folder holding cargo or
# rustc is dropped). Each install runs examples/python-gateway/check.sh with CHECK=installed
# (`keyless test` on a copy of the example: green as recorded, exit 1 with the miss diagnostic
# when the gateway drifts; .ci/run ran the whole script on the build the packages hold):
#
#   1. the wheel, `pip install`ed into a fresh venv; then, with pytest and pytest-xdist beside it
#      (examples/python-gateway/requirements-test.txt, from PyPI), the example's pytest suite
#      through the wheel's pytest plugin (examples/python-gateway/check-pytest.sh: green, green
#      with -n 2 on two served gateways, red with the miss diagnostic on the drift) and the
#      plugin's own tests (dist/python/tests);
#   2. the npm tarballs, `npm install <platform>.tgz <main>.tgz` in a fresh folder, run through the
#      main package's launcher (and, with the platform package removed, its error naming it), its
#      test-runner helpers resolving through its `exports`;
#   3. the GitHub Action's script (dist/action/run.sh) with the wheel in place of PyPI's release,
#      on the example as recorded (exit 0) and drifted (exit 1, failing the job).
#
#   PYTHON=target/ci-venv/bin/python dist/check-installs.sh target/dist
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="$(cd "${1:?usage: check-installs.sh <the folder cargo xtask dist wrote>}" && pwd)"
python="${PYTHON:?set PYTHON to a Python with the requirements of the example gateway}"
[ -x "$python" ] || { echo "installs: PYTHON=$python is not an executable" >&2; exit 1; }
python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
example="$root/examples/python-gateway"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() { echo "installs: $*" >&2; exit 1; }

clean_path=""
IFS=: read -r -a folders <<<"$PATH"
for folder in "${folders[@]}"; do
  if [ -z "$folder" ] || [ -e "$folder/cargo" ] || [ -e "$folder/rustc" ]; then
    continue
  fi
  clean_path="${clean_path:+$clean_path:}$folder"
done
for tool in cargo rustc; do
  if PATH="$clean_path" command -v "$tool" >/dev/null; then
    fail "$tool is still on the cleaned PATH ($clean_path)"
  fi
done
echo "installs: PATH without cargo or rustc: $clean_path"
# From here on, everything runs without a Rust toolchain in reach.
export PATH="$clean_path"

one() { # <glob>: the one file in the dist folder matching it
  local matches=("$dist"/$1)
  [ "${#matches[@]}" -eq 1 ] && [ -f "${matches[0]}" ] || fail "expected one $1 in $dist, found: ${matches[*]}"
  echo "${matches[0]}"
}
wheel="$(one 'keyless-*.whl')"
main_tgz="$(one 'keyless-[0-9]*.tgz')"
platform_tgz="$(one 'keyless-cli-*.tgz')"
(cd "$dist" && sha256sum --check --strict --quiet SHA256SUMS) || fail "SHA256SUMS does not match the files"

echo "installs: [1/3] pip install $(basename "$wheel") into a fresh venv"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
"$work/venv/bin/keyless" --version
CHECK=installed KEYLESS="$work/venv/bin/keyless" PYTHON="$python" "$example/check.sh"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$example/requirements.txt" -r "$example/requirements-test.txt"
PYTHON="$work/venv/bin/python" "$example/check-pytest.sh"
# The plugin's own tests (pytester): the marker, unused turns, the model-server mode, recording.
"$work/venv/bin/python" -m pytest -p pytester -p no:cacheprovider -q "$root/dist/python/tests"

echo "installs: [2/3] npm install $(basename "$platform_tgz") $(basename "$main_tgz") in a fresh folder"
mkdir "$work/npm"
(
  cd "$work/npm"
  npm init --yes >/dev/null
  npm install --no-audit --no-fund --loglevel=error "$platform_tgz" "$main_tgz"
  npx --no-install keyless --version
  # The test-runner helpers resolve through the package's `exports` (their peers, Playwright and
  # Vitest, are the user's: keyless/vitest/setup needs neither, so it loads here).
  node --input-type=module -e '
    for (const name of ["keyless/playwright", "keyless/vitest", "keyless/vitest/setup"]) import.meta.resolve(name);
    const { keylessGlobalSetup } = await import("keyless/vitest/setup");
    if (typeof keylessGlobalSetup !== "function") throw new Error("keyless/vitest/setup exports no keylessGlobalSetup");'
)
CHECK=installed KEYLESS="$work/npm/node_modules/.bin/keyless" PYTHON="$python" "$example/check.sh"
# Without its platform package (npm install --omit=optional), the launcher says which is missing.
platform_package="$(tar -xzOf "$platform_tgz" package/package.json | node -p 'JSON.parse(require("fs").readFileSync(0)).name')"
rm -rf "$work/npm/node_modules/$platform_package"
set +e
"$work/npm/node_modules/.bin/keyless" --version >"$work/missing.out" 2>&1
status=$?
set -e
[ "$status" -eq 2 ] && grep -q "the package $platform_package, which holds keyless" "$work/missing.out" ||
  { cat "$work/missing.out" >&2; fail "the launcher without $platform_package exited $status without naming it"; }

echo "installs: [3/3] the GitHub Action's script (dist/action/run.sh), the wheel in place of PyPI's"
cp -r "$example" "$work/repository"
rm -rf "$work/repository/.keyless"
action() {
  KEYLESS_PACKAGE="$wheel" KEYLESS_WORKING_DIRECTORY="$work/repository" RUNNER_TEMP="$work" \
    PYTHON="$python" "$root/dist/action/run.sh"
}
action || fail "the action failed on the example as recorded"
set +e
GATEWAY_SEND_NAMES=0 action >"$work/action-drift.out" 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat "$work/action-drift.out" >&2; fail "the action exited $status on a drifted gateway, not 1"; }
grep -q 'first differing field: \[0\].name' "$work/action-drift.out" || fail "the action's output has no miss diagnostic"
! grep -q 'keyless review' "$work/action-drift.out" ||
  fail "the action's output on a miss points at keyless review, which has nothing for a miss"
# A changed golden (its first event renamed): the log shows the diff under the fixture's row.
golden_file="$(ls "$work/repository/golden/"*.snap | head -1)"
sed -i '0,/"event": "/s//"event": "renamed-/' "$golden_file"
set +e
action >"$work/action-changed.out" 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat "$work/action-changed.out" >&2; fail "the action exited $status on a changed golden, not 1"; }
grep -q '^-  *"event": "renamed-' "$work/action-changed.out" && grep -q '^@@ ' "$work/action-changed.out" ||
  { cat "$work/action-changed.out" >&2; fail "the action's log on a changed golden has no diff"; }
echo "installs: ok (pip, npm and the action each ran keyless test: green as recorded, red on the drift)"
