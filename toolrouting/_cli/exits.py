"""The exit statuses of ``toolrouting``: what a script may rely on, tabled in docs/cli.md."""

from __future__ import annotations

__all__ = ["DONE", "EXIT_STATUSES", "FAILED", "INTERRUPTED", "PIPE_CLOSED", "USAGE"]

DONE = 0
FAILED = 1
USAGE = 2
#: 128 + SIGINT, as a shell reports a command that Ctrl-C ended.
INTERRUPTED = 130
#: 128 + SIGPIPE, as a shell reports ``cat`` or ``grep`` ended by a reader that stopped reading.
PIPE_CLOSED = 141

#: Each status and when a command exits with it.
EXIT_STATUSES: dict[int, str] = {
    DONE: "done: the run ended, the schema or the model list was printed, `parse` accepted the reply, "
    "`preflight` found nothing the compiler refuses, `fetch-model` has the model in the cache",
    FAILED: "a run, backend, tool provider or file error, shown as one line `ErrorType: message` on stderr; "
    "`parse` refused the reply; `preflight` found what the compiler refuses; `batch` ended with a question "
    "that failed; `fetch-model` could not download or check the model",
    USAGE: "usage: an unknown command or option, a bad value, a missing file (`--model`, `--db`, "
    "`--system-file`, the transcript `--resume` continues) or question, an argument or stdin that is not "
    "UTF-8, stdin closed where the question is read from it",
    INTERRUPTED: "interrupted (Ctrl-C); a run with `--transcript` can go on with `--resume`",
    PIPE_CLOSED: "the reader of stdout stopped reading (`toolrouting schema FILE` piped into `head`); "
    "nothing is shown, as for a command SIGPIPE ends",
}
