"""The command line: ``toolrouting run|batch|serve|models|schema|parse|preflight|fetch-model``,
as ``main(argv) -> int``.

``entry`` turns errors into exit statuses (``exits``); ``parser`` builds the parser from one
``add_*`` function per subcommand: ``run`` (with its ``progress`` lines), ``batch`` (with its
progress bar), ``serve``, ``models``, the ``catalogue`` commands, and ``fetch_model`` (the default
model into the cache). ``http_backend`` holds what every command with an HTTP backend shares
(the options that name its server, the API key, what a 401 means); ``arguments`` what every
subcommand shares.
"""

from .entry import main
from .exits import EXIT_STATUSES
from .parser import SUBCOMMANDS, build_parser, help_texts

__all__ = ["EXIT_STATUSES", "SUBCOMMANDS", "build_parser", "help_texts", "main"]
