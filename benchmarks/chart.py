"""A small grouped bar chart as SVG text, written by hand: no plotting library is needed.

``bar_chart(title, groups, series)`` draws one group of horizontal bars per row (a way of
asking for a decision), one bar per series (a percentage: balanced accuracy, right tool, ...),
each labelled with its value, and a legend. The output is byte-stable for the same input.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

#: Colours from the Okabe-Ito palette, told apart with colour blindness too.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")

_BAR = 14
_GAP = 4
_GROUP_GAP = 14
_LABEL = 190
_PLOT = 360
_TOP = 58


def bar_chart(
    title: str, groups: Sequence[tuple[str, str]], series: Sequence[tuple[str, Sequence[float | None]]]
) -> str:
    """SVG of ``series`` (name, one percentage per group, ``None`` for not measured) over
    ``groups`` (label, a second line such as the tokens and seconds)."""
    per_group = len(series) * (_BAR + _GAP) + _GROUP_GAP
    height = _TOP + len(groups) * per_group + 16
    width = _LABEL + _PLOT + 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="8" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    x = 8
    for index, (name, _) in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        out.append(f'<rect x="{x}" y="30" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="39">{escape(name)}</text>')
        x += 22 + 7 * len(name)
    for tick in (0, 50, 100):
        tx = _LABEL + _PLOT * tick / 100
        out.append(f'<line x1="{tx:.1f}" y1="{_TOP - 6}" x2="{tx:.1f}" y2="{height - 12}" stroke="#dddddd"/>')
        out.append(f'<text x="{tx:.1f}" y="{height - 2}" text-anchor="middle" fill="#666666">{tick}%</text>')
    for row, (label, note) in enumerate(groups):
        top = _TOP + row * per_group
        middle = top + len(series) * (_BAR + _GAP) / 2
        out.append(f'<text x="{_LABEL - 8}" y="{middle - 2:.1f}" text-anchor="end">{escape(label)}</text>')
        out.append(
            f'<text x="{_LABEL - 8}" y="{middle + 12:.1f}" text-anchor="end" fill="#666666" '
            f'font-size="10">{escape(note)}</text>'
        )
        for index, (_, values) in enumerate(series):
            value = values[row]
            y = top + index * (_BAR + _GAP)
            if value is None:
                out.append(f'<text x="{_LABEL + 4}" y="{y + _BAR - 3}" fill="#666666">not measured</text>')
                continue
            length = _PLOT * max(0.0, min(value, 100.0)) / 100
            colour = COLOURS[index % len(COLOURS)]
            out.append(f'<rect x="{_LABEL}" y="{y}" width="{length:.1f}" height="{_BAR}" fill="{colour}"/>')
            out.append(f'<text x="{_LABEL + length + 4:.1f}" y="{y + _BAR - 3}">{value:.0f}%</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
