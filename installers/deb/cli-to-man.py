#!/usr/bin/env python3
"""Turns docs/cli.md into the portico(1) man page, so the two never disagree.

Usage: cli-to-man.py docs/cli.md VERSION > portico.1

Handles the subset docs/cli.md uses: '#'/'##' headings, paragraphs, '|' tables (one .TP per row),
fenced code blocks, '-' lists, `code`, **bold** and [links](target)."""
import re
import sys


def inline(text):
    text = text.replace("\\", "\\e")
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)  # links → their text
    text = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", text)
    text = re.sub(r"`([^`]+)`", r"\\fB\1\\fR", text)
    text = text.replace("→", "->").replace("—", "-").replace("…", "...")
    if text.startswith(".") or text.startswith("'"):
        text = "\\&" + text
    return text


def main():
    src, version = sys.argv[1], sys.argv[2]
    lines = open(src, encoding="utf-8").read().splitlines()
    out = [
        '.TH PORTICO 1 "" "Portico %s" "User Commands"' % version,
        ".SH NAME",
        "portico \\- local dev server, traffic inspector and load generator",
    ]
    in_code = False
    table_header = False
    for line in lines:
        if line.startswith("```"):
            out.append(".fi" if in_code else ".nf")
            in_code = not in_code
            continue
        if in_code:
            out.append(inline(line) if line else "")
            continue
        if line.startswith("# "):
            out.append(".SH DESCRIPTION")
            continue
        if line.startswith("## ") or line.startswith("### "):
            title = line.lstrip("#").strip().replace("`", "")
            out.append((".SH " if line.startswith("## ") else ".SS ") + '"' + title.upper() + '"')
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(re.fullmatch(r":?-+:?", c) for c in cells):
                continue
            if not table_header:
                table_header = True  # the header row names the columns; rows follow
                continue
            out.append(".TP")
            out.append(inline(cells[0]))
            out.append(inline(" ".join(cells[1:])))
            continue
        table_header = False
        if not line.strip():
            out.append(".PP")
            continue
        if line.startswith("- "):
            out.append(".IP \\(bu 2")
            out.append(inline(line[2:]))
            continue
        out.append(inline(line))
    out.append(".SH SEE ALSO")
    out.append("The configuration reference: /usr/share/doc/portico/configuration.md")
    print("\n".join(out))


if __name__ == "__main__":
    main()
