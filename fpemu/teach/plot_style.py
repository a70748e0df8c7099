"""The teaching figures' colours: orange means subnormal and red overflow in every panel; the
formats of a figure take the other colours, in order.
"""

from __future__ import annotations

__all__ = ["FORMAT_COLOURS", "SUBNORMAL_COLOUR", "OVERFLOW_COLOUR", "LANDMARK_COLOUR", "format_colour"]

#: Orange means subnormal and red overflow in every panel; formats take the other colours.
SUBNORMAL_COLOUR, OVERFLOW_COLOUR, LANDMARK_COLOUR = "tab:orange", "tab:red", "0.25"
FORMAT_COLOURS = ("tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan",
                  "tab:gray", "navy", "darkgreen")


def format_colour(index: int) -> str:
    """The colour of the ``index``-th format of a figure: never the subnormal colour (orange)
    nor the overflow red, so that a colour means one thing throughout.

    >>> format_colour(0), format_colour(1), SUBNORMAL_COLOUR in FORMAT_COLOURS
    ('tab:blue', 'tab:green', False)
    """
    return FORMAT_COLOURS[index % len(FORMAT_COLOURS)]
