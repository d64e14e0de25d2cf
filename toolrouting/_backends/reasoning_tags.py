"""The tags a model reasons between, as its chat template writes them: ``<think>`` and ``</think>``.

A template that writes both has the model's own reasoning syntax. The embedded backend reads its
GGUF's template (or the one given) and llama-server names its own (``GET /props``); either way a
reply asked to reason first is reasoned between these tags, not in the route's ``thought`` slot.
"""

from __future__ import annotations

import dataclasses

__all__ = ["ReasoningTags", "checked_reasoning_budget", "reasoning_tags"]


@dataclasses.dataclass(frozen=True)
class ReasoningTags:
    """The tags a model reasons between, as its chat template writes them, and the one layout of a
    thought between them that every backend writes and serve writes back: the open tag and a line
    break, the thought, a line break, the close tag and a blank line, then the reply."""

    open: str
    close: str

    def opening(self, prompt: str) -> str:
        """What opens the reasoning after ``prompt``: nothing where the prompt (a template's
        generation prompt) opens it already, else the open tag and a line break."""
        return "" if prompt.rstrip().endswith(self.open) else self.open + "\n"

    def closing(self, thought: str) -> str:
        """``thought`` (as written after the opening) closed before the reply: its trailing
        whitespace left out, a line break, the close tag and a blank line."""
        written = thought.rstrip()
        return (written + "\n" if written else "\n") + self.close + "\n\n"

    def block(self, thought: str) -> str:
        """``thought`` between the tags, as it stands before the reply it preceded."""
        return self.open + "\n" + self.closing(thought)


#: The reasoning syntaxes a template is searched for, in order: the ``<think>`` tags of DeepSeek-R1,
#: Qwen3, QwQ, SmolLM3, Phi-4-reasoning and the models trained after them.
_KNOWN_TAGS = (ReasoningTags("<think>", "</think>"),)


def reasoning_tags(template: str) -> ReasoningTags | None:
    """The reasoning tags ``template`` (a chat template's Jinja text) writes, ``None`` where it
    writes none: both tags must be in it."""
    for tags in _KNOWN_TAGS:
        if tags.open in template and tags.close in template:
            return tags
    return None


def checked_reasoning_budget(budget: object, tags: ReasoningTags | None, give: str) -> int | None:
    """The ``reasoning_budget`` a backend is cloned with: ``None``, or the most tokens of a thought
    where its model has reasoning tags (``tags``); else a ValueError that says to give them
    (``give``: how)."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(
            f"reasoning_budget is the most tokens of a thought, an int of at least 1, not {budget!r}"
        )
    if tags is None:
        raise ValueError(
            "reasoning_budget asks the model to reason in its chat template's tags, and this model's "
            f"template has none (no <think> and </think>); give one with {give}"
        )
    return budget
