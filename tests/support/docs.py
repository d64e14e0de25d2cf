"""How the docs tests read the pages: the pages, their sections, tables and code blocks."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ShellLine:
    """One command line of a page's ``sh`` or ``bash`` block, as a reader copies it: ``page`` its
    path from the checkout's root, ``block`` the block's 0-based index on the page, ``text`` the
    line with its continuations joined (comments kept: a shell ignores them)."""

    page: str
    block: int
    text: str

    @property
    def bare(self) -> str:
        """The line without its comment."""
        return re.sub(r"\s+#\s.*$", "", self.text)

    def commands(self) -> list[list[str]]:
        """The line's commands (split at ``&&``, ``||``, ``;`` and ``|``), each as words, with
        comments and leading ``VAR=value`` assignments left out; a line of assignments alone has none."""
        found = []
        for command in re.split(r"\s(?:&&|\|\||;|\|)\s", self.text):
            words = shlex.split(command, comments=True)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words.pop(0)
            if words:
                found.append(words)
        return found


def shell_lines() -> list[ShellLine]:
    """Every line of every ``sh`` and ``bash`` block of README.md and docs/, in page order."""
    lines = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT).as_posix()
        for index, body in enumerate(
            re.findall(r"^```(?:sh|bash)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
        ):
            for line in re.sub(r"\\\n\s*", " ", body).splitlines():
                if line.strip():
                    lines.append(ShellLine(name, index, line.strip()))
    return lines


#: The install tests/project/test_install.py runs, with the model's fetch and serve after it.
RUN_BY_INSTALL = "pip install '.[serve,embedded]'"


def pip_installs() -> list[ShellLine]:
    """The pages' ``pip install`` lines but README's :data:`RUN_BY_INSTALL`, in page order: the
    lines tests/project/test_docs_installs.py runs."""
    return [
        line
        for line in shell_lines()
        if line.commands() and line.commands()[0][:2] == ["pip", "install"] and line.bare != RUN_BY_INSTALL
    ]


def distribution(requirement: str) -> str:
    """The distribution a pip requirement names (``pydantic-ai-slim[openai]``: ``pydantic-ai-slim``)."""
    return re.split(r"[\[=<>!~ ]", requirement, maxsplit=1)[0]
