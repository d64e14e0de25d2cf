"""Named limits, each with the reason it exists, all in one place: the library's (``library``:
the grammar, the backends, the loop, the catalogues, the demo, batch runs, traces, the shortlist)
and the server's (``serve``). Every part imports them from here: each module's ``__all__`` is
what it hands on, so a limit is named once, where it is defined."""

from . import library, serve
from .library import *  # noqa: F403
from .serve import *  # noqa: F403

__all__ = [*library.__all__, *serve.__all__]
