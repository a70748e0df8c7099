"""Teaching float formats: see a format, play with its bits, in pictures and in a page.

* ``values``: every code and every finite value of a format of at most 16 bits, in order,
  from :func:`fpemu.decode`; where overflow begins;
* ``plot_data``: the arrays behind the figures (number line, spacing and relative error
  bound, dynamic range of formats and block formats);
* ``plot_style``, ``plot_ranges``, ``plots``: the figures themselves (matplotlib, the ``plot``
  extra: their colours, the range bars, the rest) and :func:`plot`;
* ``rules``, ``options``, ``api``, ``strip``, ``side_by_side``, ``blocks``: the explorer's JSON
  API (what its menus offer, one code, one rounded number with the rule that fired and its
  place on the number line, one number in several formats, every code of a small format, one
  MX/NVFP4 block and MXFP4 against NVFP4), every value from fpemu's codec;
* ``server``: the explorer's web server (standard library, 127.0.0.1) and its static page;
* ``cli``: ``fpemu plot`` and ``fpemu explore``.

>>> finite_values("e2m1")[-3:].tolist(), overflow_threshold("e2m1")
([3.0, 4.0, 6.0], 7.0)
>>> encode_number("e4m3", "0.3")["code"]
'0x2A'
"""

from __future__ import annotations

from .api import describe_code, encode_number, format_from_spec
from .blocks import compare_blocks, describe_block
from .side_by_side import compare_formats, table_payload
from .strip import strips
from .plot_data import DEFAULT_RANGE_FORMATS, number_line, range_entry, ranges, spacing
from .plots import draw_number_line, draw_ranges, draw_spacing, plot
from .server import handle_api, make_server, serve_in_thread
from .values import all_codes, finite_values, overflow_threshold, value_classes

__all__ = [
    "all_codes", "finite_values", "value_classes", "overflow_threshold",
    "number_line", "spacing", "ranges", "range_entry", "DEFAULT_RANGE_FORMATS",
    "plot", "draw_number_line", "draw_spacing", "draw_ranges",
    "describe_code", "encode_number", "format_from_spec", "describe_block", "compare_blocks",
    "compare_formats", "table_payload", "strips",
    "handle_api", "make_server", "serve_in_thread",
]
