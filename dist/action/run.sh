#!/usr/bin/env bash
# The GitHub Action's step (action.yml at the repository root): installs keyless from PyPI into a
# venv of its own and runs `keyless test` in the repository, exiting as `keyless test` exits
# (1 on a drift or a replay miss), which fails the job. The venv stays off PATH, so the gateway
# under test still runs with the workflow's own Python.
#
# Environment (action.yml maps its inputs onto these):
#   KEYLESS_VERSION            the version to install (`0.1.0`); empty installs the newest
#   KEYLESS_PACKAGE            what pip installs instead, e.g. a wheel file (how .ci/run tests
#                              this script without PyPI's release)
#   KEYLESS_WORKING_DIRECTORY  the folder holding keyless.toml [default: .]
#   KEYLESS_ARGS               more arguments for `keyless test`, split on spaces, tabs and
#                              newlines (a YAML `args: |` block gives one line each); no quoting:
#                              a quote or a backslash is refused
#   KEYLESS_PYTHON             the Python that makes the venv [default: python3]
#   RUNNER_TEMP                where the venv goes (GitHub sets it) [default: a new temporary folder]
set -euo pipefail

version="${KEYLESS_VERSION:-}"
package="${KEYLESS_PACKAGE:-}"
if [ -z "$package" ]; then
  if [ -n "$version" ]; then
    case "$version" in
      *[!0-9A-Za-z.+-]*) echo "keyless action: version '$version' is not a version" >&2; exit 2 ;;
    esac
    package="keyless==${version#v}"
  else
    package="keyless"
  fi
fi

# Every line, not only the first (`read` alone stops at a newline); the words are not globbed.
# Quotes would be taken literally, so an argument holding a space cannot be written: refused,
# rather than handed on split where the author did not mean it.
case "${KEYLESS_ARGS:-}" in
  *[\"\'\\]*)
    echo "keyless action: args holds a quote or a backslash, which it does not interpret: each" \
      "argument is one word, the words separated by spaces or newlines" >&2
    exit 2 ;;
esac
IFS=$' \t\r\n' read -r -d '' -a args <<<"${KEYLESS_ARGS:-}" || true

base="${RUNNER_TEMP:-}"
if [ -z "$base" ]; then
  base="$(mktemp -d)"
  trap 'rm -rf "$base"' EXIT
fi
venv="$base/keyless-venv"
echo "keyless action: pip install $package (into $venv)"
"${KEYLESS_PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$package"
keyless="$venv/bin/keyless"
"$keyless" --version

cd "${KEYLESS_WORKING_DIRECTORY:-.}"
echo "keyless action: keyless test ${args[*]} (in $PWD)"
exec "$keyless" test "${args[@]}"
