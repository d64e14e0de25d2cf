"""A long hypothesis campaign over the fuzzing properties, counting what each one tried.

    nice -n 10 .venv/bin/python fuzz/hypothesis_campaign.py 200000

runs every property of tests/core/test_parse_fuzz.py, tests/core/test_catalogue_checks_fuzz.py and
tests/core/test_result_messages_forged.py for the given number of examples each (the "ci" profile runs
300) and prints a table; any failure is hypothesis's usual report, and the exit status is 1.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(_ROOT / "tests"), str(_ROOT / "tests" / "core"), str(_ROOT)]

import test_catalogue_checks_fuzz  # noqa: E402
import test_parse_fuzz  # noqa: E402
import test_result_messages_forged  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

__all__ = ["main"]


def _counted(module: Any, name: str, tally: list[int]) -> None:
    """Count the inputs that reach ``module.name`` (the check every example goes through)."""
    inner: Callable[..., None] = getattr(module, name)

    def counting(*args: Any) -> None:
        tally[0] += 1
        inner(*args)

    setattr(module, name, counting)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    examples = int(args[0]) if args else 100_000
    tally = [0]
    _counted(test_parse_fuzz, "check", tally)
    _counted(test_catalogue_checks_fuzz, "check", tally)
    properties = [
        test_parse_fuzz.test_actions_and_near_actions_agree,
        test_parse_fuzz.test_token_soup_agrees,
        test_parse_fuzz.test_arbitrary_text_agrees,
        test_catalogue_checks_fuzz.test_any_catalogue_gives_a_valid_schema_or_names_the_entry,
        test_catalogue_checks_fuzz.test_junk_entries_are_refused_at_the_first,
        test_catalogue_checks_fuzz.test_the_metaschema_check_agrees_with_jsonschema,
        test_result_messages_forged.test_content_never_moves_a_result_to_another_call,
        test_result_messages_forged.test_a_name_is_refused_by_both_or_reads_back_as_itself,
        test_result_messages_forged.test_only_what_the_header_writes_is_split,
    ]
    budget = settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    print(f"| {'property':<62} | {'checked':>9} | {'seconds':>8} |")
    print(f"|{'-' * 64}|{'-' * 11}|{'-' * 10}|")
    for prop in properties:
        tally[0] = 0
        start = time.perf_counter()
        budget(prop)()
        checked = f"{tally[0]:,}" if tally[0] else f"{examples:,}*"
        print(f"| {prop.__name__:<62} | {checked:>9} | {time.perf_counter() - start:>8.0f} |", flush=True)
    print("\n* examples requested; the property has no counted check, hypothesis runs that many")
    return 0


if __name__ == "__main__":
    sys.exit(main())
