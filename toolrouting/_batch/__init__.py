"""Batch runs: a file of questions, each its own routing run and transcript, many in flight at once.

``questions`` reads the JSON Lines questions file; ``folder`` is the output folder, where a
result on disk marks a finished question; ``runner`` drives the runs on asyncio and counts
them (``BatchProgress``). It is how a serving engine with continuous batching is kept busy.
"""

from .folder import RESULT_SUFFIX, TRANSCRIPT_SUFFIX, BatchFolder
from .questions import QUESTION_KEYS, BatchQuestion, read_questions
from .runner import BatchProgress, arun_batch, run_batch

__all__ = [
    "QUESTION_KEYS",
    "RESULT_SUFFIX",
    "TRANSCRIPT_SUFFIX",
    "BatchFolder",
    "BatchProgress",
    "BatchQuestion",
    "arun_batch",
    "read_questions",
    "run_batch",
]
