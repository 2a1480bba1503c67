#!/usr/bin/env python3
"""Checks the repository's Markdown docs (standard library only; `.ci/run` runs it):

1. every relative link (`[text](path)`, `[text](path#anchor)`, `[text](#anchor)`, and
   reference definitions `[name]: path`) names a file or folder that exists, and its anchor a
   heading of that Markdown file, slugged as GitHub slugs headings (lower case, punctuation but
   `-` and `_` dropped, spaces to `-`, a repeated heading gets `-1`, `-2`, …);
2. every flag a doc shows on a `keyless <subcommand>` command line (in a code block or in inline
   code) is one that `keyless <subcommand> --help` lists;
3. each doc that presents the product (PRODUCT_DOCS) names all five model wires and all six API
   dialects (`keyless test --help`'s `--api` values), so none reads as if keyless spoke fewer.

    python3 scripts/check-docs.py --keyless target/debug/keyless      # the repository
    python3 scripts/check-docs.py --root DIR                           # links only, under DIR

Exit 0 when everything resolves, 1 listing each broken link or unknown flag as file:line.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

SKIPPED_FOLDERS = {"node_modules", "target", ".git", ".keyless", "dist-npm"}
SUBCOMMANDS = ("init", "test", "accept", "review", "record", "serve", "model-server")
# The docs a user reads to learn what keyless does, and the wires the model server answers.
PRODUCT_DOCS = ("README.md", "dist/README.md", "docs/README.md", "docs/testing-your-own-gateway.md",
                "docs/test-runners.md")
WIRES = ("Chat Completions", "Responses", "Messages", "Gemini", "Bedrock Converse")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
COMMAND = re.compile(r"(?<![\w./-])keyless\s+(" + "|".join(SUBCOMMANDS) + r")\b(.*)")
GLOBAL_COMMAND = re.compile(r"(?<![\w./-])keyless((?:\s+--?[a-zA-Z][\w-]*)+)")


def markdown_files(root: Path) -> List[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.md"],
            cwd=root, check=True, capture_output=True,
        ).stdout.decode().split("\0")
        files = [root / name for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        files = list(root.rglob("*.md"))
    return sorted(
        f for f in files
        if f.is_file() and not SKIPPED_FOLDERS.intersection(f.relative_to(root).parts)
    )


def prose_lines(text: str) -> Iterator[Tuple[int, str, bool]]:
    """(line number, line, inside a fenced code block)."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            yield number, line, True
            continue
        yield number, line, fenced


def rendered_text(heading: str) -> str:
    """What GitHub renders of a heading's Markdown: link text without its target, code without
    its backticks, emphasis without its marks, HTML tags dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"(`+)(.+?)\1", r"\2", text)
    text = re.sub(r"(\*\*|__|\*|(?<!\w)_(?!_))", "", text)
    return text


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (before de-duplication)."""
    text = rendered_text(heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> Set[str]:
    found: Set[str] = set()
    seen: Dict[str, int] = {}
    for _, line, fenced in prose_lines(text):
        if fenced:
            continue
        found.update(HTML_ANCHOR.findall(line))
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(line: str) -> Iterator[str]:
    without_code = INLINE_CODE.sub("", line)
    for match in INLINE_LINK.finditer(without_code):
        yield match.group(1)
    reference = REFERENCE.match(without_code)
    if reference:
        yield reference.group(1)


def is_external(target: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")


def check_links(root: Path, files: List[Path]) -> List[str]:
    problems: List[str] = []
    anchor_cache: Dict[Path, Set[str]] = {}

    def anchors_of(path: Path) -> Set[str]:
        if path not in anchor_cache:
            anchor_cache[path] = anchors(path.read_text("utf-8"))
        return anchor_cache[path]

    for file in files:
        for number, line, fenced in prose_lines(file.read_text("utf-8")):
            if fenced:
                continue
            for target in links(line):
                if not target or is_external(target):
                    continue
                place = f"{file.relative_to(root)}:{number}"
                path_part, _, anchor = target.partition("#")
                path_part = path_part.split("?", 1)[0]
                if path_part:
                    resolved = (root / path_part.lstrip("/")) if path_part.startswith("/") else (file.parent / path_part)
                    if not resolved.exists():
                        problems.append(f"{place}: the link {target} names {path_part}, which does not exist")
                        continue
                else:
                    resolved = file
                if anchor and resolved.is_file() and resolved.suffix == ".md":
                    if anchor.lower() not in anchors_of(resolved):
                        problems.append(
                            f"{place}: the link {target} names the anchor #{anchor}, which no heading "
                            f"of {resolved.relative_to(root)} makes"
                        )
    return problems


def help_flags(keyless: str, subcommand: Optional[str]) -> Set[str]:
    argv = [keyless, *([subcommand] if subcommand else []), "--help"]
    output = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    # The options' own lines only (`  -x, --name <VALUE>`), not flags the examples mention.
    flags: Set[str] = set()
    for line in output.splitlines():
        match = re.match(r"^\s+(?:-\w,\s+)?(--[a-z][a-z0-9-]*)", line)
        if match:
            flags.add(match.group(1))
    return flags


def shown_commands(text: str) -> Iterator[Tuple[int, Optional[str], List[str]]]:
    """(line, subcommand or None for `keyless --flag`, the flags shown on that command line)."""
    pending: Optional[Tuple[int, Optional[str], str]] = None
    for number, line, fenced in prose_lines(text):
        pieces = [line] if fenced else [m.group(2) for m in INLINE_CODE.finditer(line)]
        if fenced and pending is not None:
            start, sub, command = pending
            command += " " + line
            if line.rstrip().endswith("\\"):
                pending = (start, sub, command.rstrip("\\ "))
                continue
            yield start, sub, flags_of(command)
            pending = None
            continue
        for piece in pieces:
            match = COMMAND.search(piece)
            if match:
                sub, rest = match.group(1), match.group(2)
                if fenced and rest.rstrip().endswith("\\"):
                    pending = (number, sub, rest.rstrip("\\ "))
                    continue
                yield number, sub, flags_of(rest)
            else:
                global_match = GLOBAL_COMMAND.search(piece)
                if global_match:
                    yield number, None, flags_of(global_match.group(1))


def flags_of(command: str) -> List[str]:
    # The command ends at a comment, a pipe, a list of commands or a redirection.
    command = re.split(r"\s#|\s\|\s|\s&&\s|;|\s>", command, maxsplit=1)[0]
    # Quoted arguments are values, not flags.
    command = re.sub(r"'[^']*'|\"[^\"]*\"", "", command)
    return FLAG.findall(command)


def check_flags(root: Path, files: List[Path], keyless: str) -> List[str]:
    known: Dict[Optional[str], Set[str]] = {None: help_flags(keyless, None)}
    for sub in SUBCOMMANDS:
        known[sub] = help_flags(keyless, sub) | {"--help"}
    known[None] |= {"--help", "--version"}
    problems: List[str] = []
    for file in files:
        for number, sub, flags in shown_commands(file.read_text("utf-8")):
            for flag in flags:
                if flag not in known[sub]:
                    name = f"keyless {sub}" if sub else "keyless"
                    problems.append(
                        f"{file.relative_to(root)}:{number}: `{name}` has no flag {flag} "
                        f"(`{name} --help` lists {', '.join(sorted(known[sub]))})"
                    )
    return problems


def dialects(keyless: str) -> List[str]:
    output = subprocess.run([keyless, "test", "--help"], check=True, capture_output=True, text=True).stdout
    after_api = output.split("--api", 1)[1]
    values = re.search(r"\[possible values: ([^\]]+)\]", after_api)
    if not values:
        raise SystemExit("check-docs: `keyless test --help` lists no possible values for --api")
    return [value.strip() for value in values.group(1).split(",")]


def check_names(root: Path, keyless: str) -> List[str]:
    names = list(WIRES) + dialects(keyless)
    problems: List[str] = []
    for name in PRODUCT_DOCS:
        path = root / name
        if not path.is_file():
            continue
        text = " ".join(path.read_text("utf-8").split())
        missing = [wanted for wanted in names if wanted not in text]
        if missing:
            problems.append(f"{name}: names no {', '.join(missing)} (every wire: {', '.join(WIRES)}; "
                            f"every dialect of `keyless test --api`)")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the folder whose Markdown files are checked (default: the repository)")
    parser.add_argument("--keyless", help="the keyless binary whose --help the flags are checked against "
                        "(without it, only links are checked)")
    args = parser.parse_args()
    root = args.root.resolve()
    files = markdown_files(root)
    problems = check_links(root, files)
    if args.keyless:
        problems += check_flags(root, files, args.keyless)
        problems += check_names(root, args.keyless)
    for problem in problems:
        print(f"check-docs: {problem}", file=sys.stderr)
    what = "link and anchor" + (", keyless flag, wire and dialect" if args.keyless else "")
    if problems:
        print(f"check-docs: {len(problems)} problem(s) in {len(files)} Markdown file(s)", file=sys.stderr)
        return 1
    print(f"check-docs: {len(files)} Markdown file(s), every {what} checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
