"""The tool names the route schema's tests and the result messages' tests share."""

from __future__ import annotations

from hypothesis import strategies as st

#: Tool names of printable characters and no whitespace: the names a catalogue may declare.
TOOL_NAMES = st.text(
    st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=20,
).filter(lambda n: not any(c.isspace() for c in n))
