#!/usr/bin/env python3
"""scripts/check-docs.py against small folders of Markdown (standard library only; `.ci/run`
runs it): it passes on links and anchors that resolve, and fails, naming file:line, on a broken
link, a broken anchor and a flag `keyless <sub> --help` does not list.

    python3 scripts/test_check_docs.py
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "check-docs.py"

# A stand-in for `keyless`: its --help, and `keyless serve --help`'s options.
FAKE_KEYLESS = """#!/bin/sh
case "$1" in
  serve) printf 'Options:\\n      --port <PORT>\\n          The port\\n  -h, --help\\n' ;;
  test) printf 'Options:\\n      --api <API>\\n          [possible values: deerflow, ag-ui]\\n' ;;
  *) printf 'Options:\\n  -h, --help\\n  -V, --version\\n' ;;
esac
"""

GOOD = """\
# Title

It answers Chat Completions, Responses, Messages, Gemini and Bedrock Converse calls, and speaks
deerflow and ag-ui.

See [the guide](notes/guide.md#a-section-with-code), [below](#title-1) and [the folder](notes/).

## Title

```sh
keyless serve --port 3000   # a comment with --not-a-flag
[not a link](missing.md)
```

`keyless serve --port 0` and `keyless --version`; [a site](https://example.com/x.md).
"""

GUIDE = """\
# Guide

## A section with `code`!
"""


def run(files, *extra):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        keyless = root / "keyless"
        keyless.write_text(FAKE_KEYLESS)
        keyless.chmod(0o755)
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "--root", str(root), "--keyless", str(keyless), *extra],
            capture_output=True, text=True, env={**os.environ, "GIT_DIR": str(root / "no-git")},
        )
        return done.returncode, done.stdout + done.stderr


class CheckDocs(unittest.TestCase):
    def test_links_anchors_and_flags_that_resolve_pass(self):
        status, output = run({"README.md": GOOD, "notes/guide.md": GUIDE})
        self.assertEqual(status, 0, output)

    def test_each_broken_link_anchor_or_flag_fails_naming_its_line(self):
        broken = GOOD + textwrap.dedent("""\
            A [broken link](notes/gone.md) and a [broken anchor](notes/guide.md#no-such-section).
            Run `keyless serve --prot 3000`.
            """)
        status, output = run({"README.md": broken, "notes/guide.md": GUIDE})
        self.assertEqual(status, 1, output)
        for expected in [
            "README.md:16: the link notes/gone.md names notes/gone.md, which does not exist",
            "README.md:16: the link notes/guide.md#no-such-section names the anchor #no-such-section",
            "README.md:17: `keyless serve` has no flag --prot",
            "check-docs: 3 problem(s)",
        ]:
            self.assertIn(expected, output)
        print(f"\n--- check-docs on a broken link (expected to fail) ---\n{output}", file=sys.stderr)


    def test_a_product_doc_that_leaves_out_a_wire_or_a_dialect_fails_naming_it(self):
        status, output = run({"README.md": GOOD.replace(" and ag-ui", "").replace("Gemini and ", ""),
                              "notes/guide.md": GUIDE})
        self.assertEqual(status, 1, output)
        self.assertIn("README.md: names no Gemini, ag-ui", output)


if __name__ == "__main__":
    unittest.main(verbosity=2)
