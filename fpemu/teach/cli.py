"""The ``fpemu plot`` and ``fpemu explore`` commands.

``fpemu plot e4m3 e5m2 --out fp8.png`` draws the number line, the spacing and the dynamic
range of the formats into one image, of the type the suffix of ``--out`` names (``.svg``,
``.pdf``, ``.jpg`` ...; ``--kind`` picks one panel); ``fpemu explore`` serves the explorer
page on 127.0.0.1 until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import webbrowser
from typing import Any

from ..arguments import option_name
from ..errors import RunError
from ..formats import get_format
from .plots import KINDS, check_plot_request, plot

__all__ = ["cmd_plot", "cmd_explore", "register_cli"]


def cmd_plot(args: argparse.Namespace) -> int:
    """``fpemu plot``: draw the figures of the formats into ``--out``."""
    check_plot_request(args.format, args.kind)  # a bad format fails before matplotlib loads
    drawn = plot(args.format, args.out, kind=args.kind)
    if args.json:
        print(json.dumps({"path": str(args.out), "panels": list(drawn),
                          "formats": list(args.format)}))
    else:
        print(f"wrote {args.out} ({', '.join(drawn)} of {', '.join(args.format)})")
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    """``fpemu explore``: serve the explorer page until interrupted."""
    from .server import make_server

    start = "" if args.format is None else f"#format={get_format(args.format).name}"
    try:
        server = make_server(args.port, quiet=not args.verbose)
    except OSError as exc:
        raise RunError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}; "
                       "choose another with --port (0: any free port)") from None
    _interruptible()
    url = f"http://127.0.0.1:{server.server_address[1]}/{start}"
    print(f"fpemu explore: serving {url} (Ctrl-C stops it)", flush=True)
    if not args.no_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


def _interruptible() -> None:
    """Let Ctrl-C (SIGINT) stop the server even where the parent process left SIGINT ignored
    or blocked (both are inherited across exec: a pytest run with thread pools or a job
    runner can start us that way, and the server would never stop)."""
    if threading.current_thread() is not threading.main_thread():
        return  # signals belong to the main thread
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _port(text: str) -> int:
    """A port number from the command line (0: any free port).

    >>> _port("8765"), _port("0")
    (8765, 0)
    """
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, got {port}")
    return port


def register_cli(subparsers: Any) -> None:
    """Add ``plot`` and ``explore`` to the ``fpemu`` command line."""
    p = subparsers.add_parser("plot", help="draw formats: number line, spacing, dynamic range (PNG, SVG, PDF ...)")
    p.add_argument("format", nargs="+", metavar="FORMAT",
                   help="format names (e4m3, bf16, ...); for --kind ranges also block formats (mxfp4)")
    p.add_argument("--out", "-o", required=True,
                   help="the image file to write, of the type its suffix names (.png, .jpg, .svg, .pdf ...)")
    p.add_argument("--kind", "-k", default="all", type=option_name, choices=KINDS,
                   help="all panels (default), or line, spacing or ranges alone")
    p.add_argument("--json", action="store_true", help="print what was drawn as JSON")
    p.set_defaults(func=cmd_plot)

    p = subparsers.add_parser("explore", help="a local web page to play with a format's bits")
    p.add_argument("--port", "-p", type=_port, default=8765, help="port on 127.0.0.1 (default 8765; 0: any)")
    p.add_argument("--format", "-f", default=None, help="the format the page opens with")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser, just serve")
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.set_defaults(func=cmd_explore)
