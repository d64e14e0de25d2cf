"""The benchmarks' docs that cannot drift: every benchmark command a page shows runs a script of
benchmarks/ with the way and options its parser declares, and each claim of docs/benchmarks/index.md
has its figure, model and machine, commit, command and page."""

from __future__ import annotations

import re
import shlex

from support.docs import PAGES, _code, _rows, _section
from support.paths import ROOT

#: A benchmark run as a page shows it, ``python -m benchmarks.GROUP.NAME [WAY] --option ...``.
BENCHMARK_RUN = re.compile(r"python3? -m benchmarks\.([\w.]+)((?:[ \t]+[^\s`;|&()]+)*)")


def _benchmark_errors(code: str) -> list[str]:
    """What is wrong with the benchmark commands of a piece of code: a module that is no script of
    benchmarks/, a way or an option its parser does not declare, a script run by its path (whose
    imports of benchmarks.common need the root on the path, as ``-m`` puts it). Commands after a
    ``git checkout`` run another commit's scripts, and are left."""
    code = code.replace("\\\n", " ").split("git checkout")[0]
    wrong = []
    for module, words in BENCHMARK_RUN.findall(code):
        path = ROOT / "benchmarks" / f"{module.replace('.', '/')}.py"
        if not path.exists():
            wrong.append(f"benchmarks.{module}, no module of benchmarks/")
            continue
        source = path.read_text(encoding="utf-8")
        if 'if __name__ == "__main__":' not in source:
            wrong.append(f"benchmarks.{module}, no script")
        try:
            args = shlex.split(words)  # a quoted argument is one, options and all
        except ValueError:
            args = words.split()
        shown = [arg.split("=")[0] for arg in args if arg.startswith("--")]
        if args and "add_subparsers" in source and not args[0].startswith("-"):
            shown.append(args[0])  # the way
        wrong += [f"benchmarks.{module} {word}" for word in shown if f'"{word}"' not in source]
    for script in re.findall(r"python3? (benchmarks/[\w/]+\.py)", code):
        if (ROOT / script).exists():
            wrong.append(f"{script} run by its path, not as a module")
    return wrong


def test_every_benchmark_command_takes_the_way_and_options_it_is_shown_with() -> None:
    """`python -m benchmarks.GROUP.NAME [WAY] --option ...` as a page shows it: the script exists
    and its parser declares the way and each option."""
    wrong = []
    for page in PAGES:
        for code in _code(page.read_text(encoding="utf-8")):
            wrong += [f"{page.name}: {error}" for error in _benchmark_errors(code)]
    assert wrong == []


BENCHMARK_PAGES = ROOT / "docs" / "benchmarks"
#: A claim's commit, a cell of its own: any abbreviated hash, digits alone too, where a
#: paragraph's (test_docs.COMMIT) needs a letter to tell a hash from a number.
CLAIM_COMMIT = re.compile(r"[0-9a-f]{7,40}")


def _claims() -> list[list[str]]:
    """The rows of docs/benchmarks/index.md's table of claims."""
    text = (BENCHMARK_PAGES / "index.md").read_text(encoding="utf-8")
    return [row for row in _rows(_section(text, "The claims")) if row[0] != "claim"]


def test_every_claim_has_its_figure_commit_command_and_page() -> None:
    """Each claim: a figure, the model and machine, a commit, a command that runs a benchmark
    script with the options its parser declares (and parses as a shell line), and a link to the
    page that has the run."""
    claims = _claims()
    assert claims
    wrong = []
    for claim, figure, machine, commit, command, page in claims:
        code = command.strip("`")
        if not (figure and machine and CLAIM_COMMIT.fullmatch(commit)):
            wrong.append(f"{claim}: a figure, the model and machine, and a commit")
        if not BENCHMARK_RUN.search(code):
            wrong.append(f"{claim}: no benchmark command")
        try:
            shlex.split(code)
        except ValueError as error:
            wrong.append(f"{claim}: {error}")
        wrong += [f"{claim}: {error}" for error in _benchmark_errors(code)]
        link = re.fullmatch(r"\[[\w/.]+\]\(((?:\.\./)?\w+\.md)#[\w-]+\)", page)
        if link is None or not (BENCHMARK_PAGES / link[1]).exists():
            wrong.append(f"{claim}: {page}, no page of the docs")
    assert wrong == []


def test_every_benchmark_page_is_linked_from_the_claims_page() -> None:
    text = (BENCHMARK_PAGES / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((\w+)\.md[#)]", text))
    pages = {path.stem for path in BENCHMARK_PAGES.glob("*.md")} - {"index"}
    assert pages - linked == set()
