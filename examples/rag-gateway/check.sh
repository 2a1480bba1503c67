#!/usr/bin/env bash
# The retrieval example as a user runs it, from a folder outside the workspace (a copy of this
# one): the committed fixture (two questions; each costs an embeddings call over the documents,
# one over the question, then a chat call with the two nearest documents) passes against its
# golden with every embeddings call answered from the fixture; one document's text changed turns
# it red with a miss on the embeddings call (not only on the chat call after it), naming the
# call and the differing input; another embeddings model is a miss too.
#
#   KEYLESS=target/debug/keyless PYTHON=target/ci-venv/bin/python examples/rag-gateway/check.sh
set -euo pipefail
keyless="$(realpath "${KEYLESS:?set KEYLESS to the keyless binary}")"
python="${PYTHON:?set PYTHON to a Python with openai installed}"
export PYTHON="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$(dirname "$0")"/. "$work"/
rm -rf "$work/.keyless"
cd "$work"

fail() { echo "rag example: $*" >&2; exit 1; }

echo "rag example: keyless test in $work"
"$keyless" test --json > green.json || fail "keyless test failed on the committed fixture: $(cat green.json)"
"$PYTHON" - green.json <<'PY' || fail "the green run is not what the fixture holds: $(cat green.json)"
import json, sys
[line] = [json.loads(line) for line in open(sys.argv[1])]
assert line["golden"] == "ok" and not line["misses"], line
PY

echo "rag example: one document's text changed must miss at the embeddings call"
cp documents.json documents.recorded.json
"$PYTHON" - documents.json <<'PY'
import json, sys
documents = json.load(open(sys.argv[1]))
documents[0]["text"] = documents[0]["text"].replace("two year warranty", "three year warranty")
json.dump(documents, open(sys.argv[1], "w"), indent=2)
PY
set +e
"$keyless" test > changed.out 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || fail "a changed document exited $status, not 1: $(cat changed.out)"
grep -q 'embeddings miss: `OpenAI embeddings text-embedding-3-small` from `lead_agent`' changed.out ||
  fail "the miss does not name the embeddings call: $(cat changed.out)"
grep -q 'first differing field: inputs\[0\]: recorded "The Keyless grinder carries a two year' changed.out &&
  grep -q 'now "The Keyless grinder carries a three year' changed.out ||
  fail "the miss does not show the changed text: $(cat changed.out)"
mv documents.recorded.json documents.json

echo "rag example: another embeddings model must miss too"
set +e
GATEWAY_EMBEDDING_MODEL=text-embedding-3-large "$keyless" test > model.out 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || fail "another embeddings model exited $status, not 1: $(cat model.out)"
grep -q 'text-embedding-3-large' model.out || fail "the miss does not name the model: $(cat model.out)"
echo "rag example: ok (passes as recorded; a changed document and another embeddings model each fail at the embeddings call, named)"
