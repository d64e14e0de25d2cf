"""How the docs tests read the pages: the pages, their sections, tables and code blocks."""

from __future__ import annotations

import re

from support.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _section(text: str, heading: str) -> str:
    """The text under ``## heading``, up to the next heading of that level."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _rows(section: str) -> list[list[str]]:
    """The body rows of the section's Markdown tables, each a list of cells."""
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set("".join(cells)) <= set("-: "):
            rows.append(cells)
    return [row for row in rows if row[0] != "part"]


def _code(text: str) -> list[str]:
    """The shell and text code blocks and the inline code of a page, where commands are shown."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    shown = [re.sub(r"\s#.*", "", body) for language, body in blocks if language != "python"]  # no comments
    return shown + re.findall(r"`([^`\n]+)`", prose)
