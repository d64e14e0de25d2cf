"""Docs that cannot drift: every example in the README and docs/ runs as a doctest."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
from support.architecture import CORE_PACKAGES
from support.docs import PAGES, _code, _rows, _section
from support.paths import ROOT


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_examples_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples read the repository's sample files by relative path
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
    )
    assert result.failed == 0, (
        f"{result.failed} example(s) in {page.name} failed; run the doctest to see them"
    )


def test_the_errors_page_draws_the_error_tree_of_the_code() -> None:
    import re

    import toolrouting
    from toolrouting import _errors

    def names(text: str) -> list[str]:
        return re.findall(r"[├└]── (\w+)", text)

    drawn = names((ROOT / "docs" / "errors.md").read_text(encoding="utf-8"))
    assert drawn == names(_errors.__doc__ or "")
    assert sorted(drawn) == sorted(set(_errors.__all__) - {"ToolRoutingError"})
    for name in drawn:
        assert issubclass(getattr(toolrouting, name), toolrouting.ToolRoutingError)


# Docs that stay true: what the docs count, list or call missing is checked against the code.

PACKAGE = ROOT / "toolrouting"
#: The counts the docs write out in words.
_COUNTS = "one two three four five six seven eight nine ten eleven twelve thirteen"
NUMBERS = {word: number for number, word in enumerate(_COUNTS.split(" "), 1)}


def _code_parts() -> dict[str, list[str]]:
    """Each part of the package and the modules it holds: the flat core, then one per package, where
    a module of a package inside the part is named by its path (``embedded/backend``)."""
    flat = [p.stem for p in PACKAGE.glob("_*.py") if p.stem not in ("__init__", "__main__")]
    inner = [
        f"{name}/{p.stem}"
        for name in CORE_PACKAGES
        for p in (PACKAGE / name).glob("*.py")
        if p.stem != "__init__"
    ]
    parts = {"core": sorted(flat + inner)}  # the core's own packages (its limits) are its modules
    for package in sorted(
        p.parent for p in PACKAGE.glob("*/__init__.py") if p.parent.name not in CORE_PACKAGES
    ):
        parts[package.name] = sorted(
            p.relative_to(package).with_suffix("").as_posix()
            for p in package.rglob("*.py")
            if p.name != "__init__.py"
        )
    return parts


def _documented_parts() -> dict[str, tuple[str, str]]:
    """docs/architecture.md's parts of the package: the part's key -> (its name there, what it holds)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    parts: dict[str, tuple[str, str]] = {}
    for name, where, what in _rows(_section(text, "The parts")):
        if where == "`toolrouting/_*.py`":
            parts["core"] = (name, what)
        elif where.startswith("`toolrouting/"):
            parts[where.strip("`").removeprefix("toolrouting/").rstrip("/")] = (name, what)
    return parts


def _bare(name: str) -> str:
    return name.removeprefix("the ")


def _names(row: str, module: str) -> bool:
    """Whether a part's row names a module: one of a package inside the part after the package."""
    folder, _, stem = module.rpartition("/")
    start = row.find(f"`{folder}/`") if folder else 0
    return start != -1 and f"`{stem}`" in row[start:]


def test_the_parts_table_holds_the_packages_and_their_modules() -> None:
    from support.architecture import MAY_IMPORT

    code, documented = _code_parts(), _documented_parts()
    assert sorted(documented) == sorted(code)
    assert set(code) <= set(MAY_IMPORT)
    unnamed = {
        part: [module for module in modules if not _names(documented[part][1], module)]
        for part, modules in code.items()
    }
    assert {part: modules for part, modules in unnamed.items() if modules} == {}


def test_the_import_table_is_the_architecture_tests() -> None:
    from support.architecture import MAY_IMPORT

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    by_name = {name: part for part, (name, _) in _documented_parts().items()}
    by_name["the core"] = "core"  # the table's short name for the routing core
    drawn: dict[str, set[str]] = {}
    for name, allowed in _rows(_section(text, "Which part may import which")):
        if name not in by_name:
            continue  # a part of the repository outside the package, drawn beside it
        part = by_name[name]
        if allowed == "every part":
            drawn[part] = set(_code_parts()) - {part}
        elif allowed == "nothing outside the core":
            drawn[part] = set()
        else:
            drawn[part] = {by_name[other.strip()] for other in allowed.split(",")}
    assert drawn == {part: MAY_IMPORT[part] for part in _code_parts()}


def test_every_count_of_parts_is_the_packages() -> None:
    count = len(_code_parts())
    for page in (ROOT / "docs" / "development.md", ROOT / "docs" / "architecture.md"):
        text = page.read_text(encoding="utf-8")
        counts = [NUMBERS.get(word.lower(), word) for word in re.findall(r"\b(\w+) parts\b", text)]
        said = [n for n in counts if isinstance(n, int) or n.isdigit()]  # "of parts" counts nothing
        assert said, page.name
        assert {int(n) for n in said} == {count}, page.name


def test_the_development_page_names_every_part() -> None:
    page = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    sentence = re.search(r"The package has (\w+) parts: (.+?)\.\n", page, re.DOTALL)
    assert sentence is not None
    listed = " ".join(sentence[2].split())
    missing = [name for name, _ in _documented_parts().values() if _bare(name) not in listed]
    assert missing == []
    assert len(re.split(r", | and ", listed)) == len(_code_parts())  # "a, b, ... and k": no part more


def _commands() -> set[str]:
    from toolrouting._cli.parser import help_texts

    return {command.split()[1] for command in help_texts() if command != "toolrouting"}


def test_every_command_the_docs_name_is_in_the_parser() -> None:
    named: dict[str, str] = {}
    for page in PAGES:
        for code in _code(page.read_text(encoding="utf-8")):
            for command in re.findall(r"(?<![\w./-])toolrouting ([a-z][\w-]*)", code):
                named.setdefault(command, page.name)
    assert {command: page for command, page in named.items() if command not in _commands()} == {}


def test_the_command_lists_name_every_command() -> None:
    commands = _commands()
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^- `toolrouting ([\w-]+)", cli, re.MULTILINE)) == commands
    assert set(re.findall(r"^### `toolrouting ([\w-]+) --help`", cli, re.MULTILINE)) == commands
    count = re.search(r"has (\w+) subcommands", cli)
    assert count is not None
    assert NUMBERS[count[1]] == len(commands)
    block = _section((ROOT / "README.md").read_text(encoding="utf-8"), "The command line")
    assert set(re.findall(r"^(?:\S+=\S+ )?toolrouting ([\w-]+)", block, re.MULTILINE)) == commands
    row = _documented_parts()["_cli"][1]  # docs/architecture.md's row of the command line
    assert {command for command in commands if not re.search(rf"`(toolrouting )?{command}`", row)} == set()


def _mcp_offers_only_tools() -> None:
    """docs/mcp.md "Not yet": no resources, prompts, sampling or elicitation; no ${VAR} in configs."""
    from toolrouting import mcp_servers_from_config

    source = "".join(path.read_text(encoding="utf-8") for path in (PACKAGE / "_catalogues").glob("mcp*.py"))
    for feature in (
        "list_resources",
        "read_resource",
        "list_prompts",
        "get_prompt",
        "sampling_callback",
        "elicitation_callback",
    ):
        assert feature not in source, feature
    (server,) = mcp_servers_from_config({"mcpServers": {"s": {"command": "x", "env": {"K": "${HOME}"}}}})
    assert getattr(server, "env", None) == {"K": "${HOME}"}


#: Each claim that something is not there yet, by page and the line that makes it, with the
#: check that it still is not; any other such claim must go.
NOT_YET = {("mcp.md", "## Not yet"): _mcp_offers_only_tools}


def test_every_not_yet_claim_is_checked_against_the_code() -> None:
    found = set()
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            if re.search(r"\b(yet|for now|today)\b", line, re.IGNORECASE):
                found.add((page.name, line.strip()))
    assert found == set(NOT_YET)
    for check in NOT_YET.values():
        check()


def test_no_doc_cites_an_issue_of_its_own() -> None:
    cited = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bissues? #?\d+|\bthe issue\b(?! tracker)|\bthe issue's\b", line, re.IGNORECASE):
                cited.append(f"{page.name}:{number}: {line.strip()}")
    assert cited == []


#: A commit named in a paragraph (seven to forty hex digits, a letter and a digit among them):
#: where a file that has left the tree is still found.
COMMIT = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def test_every_file_the_docs_name_is_in_the_tree_or_at_its_commit() -> None:
    """A test, benchmark, fuzz or helper script a page names exists, or its paragraph names the
    commit that holds it (a script that has left says so, with the commit)."""
    gone = []
    for page in PAGES:
        for paragraph in re.split(r"\n[ \t]*\n", page.read_text(encoding="utf-8")):
            for path in re.findall(
                r"(?<![\w/.])((?:tests|benchmarks|fuzz|scripts)/(?:[\w-]+/)*[a-z0-9_-]+\.(?:py|sh))\b",
                paragraph,
            ):
                if not (ROOT / path).exists() and not COMMIT.search(paragraph):
                    gone.append(f"{page.name}: {path}")
    assert gone == []


def test_the_docs_map_links_every_page() -> None:
    """docs/index.md, the map, links every page of docs/, and the README links the map."""
    docs = ROOT / "docs"
    text = (docs / "index.md").read_text(encoding="utf-8")
    linked = {(docs / link.partition("#")[0]).resolve() for link in re.findall(r"\]\(([^)\s#]+)", text)}
    pages = {page.resolve() for page in docs.rglob("*.md")} - {(docs / "index.md").resolve()}
    assert sorted(str(page.relative_to(docs.resolve())) for page in pages - linked) == []
    assert "](docs/index.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_pages_that_list_what_the_server_serves_list_every_endpoint() -> None:
    """serve.md's opening and cli.md's line on `serve` name each path the app routes."""
    pytest.importorskip("starlette")
    from starlette.routing import Route

    from toolrouting import AsyncScriptedBackend, serve_app

    app = serve_app(AsyncScriptedBackend([]))
    paths = {route.path for route in app.routes if isinstance(route, Route)}
    assert paths
    serve = (ROOT / "docs" / "serve.md").read_text(encoding="utf-8").split("\n## ")[0]
    cli = re.search(
        r"^- `toolrouting serve`.*?(?=^- )",
        (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"),
        re.DOTALL | re.MULTILINE,
    )
    assert cli is not None
    for name, text in (("serve.md", serve), ("cli.md", cli[0])):
        assert {
            path for path in paths if not re.search(rf"`(GET |POST )?{re.escape(path)}`", text)
        } == set(), name


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_finds_its_page_and_heading() -> None:
    headings = {
        page.resolve(): {
            _anchor(heading)
            for heading in re.findall(
                r"^#+ (.+)$",
                re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE),
                re.MULTILINE,
            )
        }
        for page in PAGES
    }
    broken = []
    for page in PAGES:
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"\w+:", link):
                continue  # another site's page
            file, _, anchor = link.partition("#")
            target = (page.parent / file).resolve() if file else page.resolve()
            if not target.exists() or (anchor and target in headings and anchor not in headings[target]):
                broken.append(f"{page.name}: {link}")
    assert broken == []
