"""``python -m research.fp8_fp16 probe|fit ...`` (see :mod:`research.fp8_fp16.cli`)."""

from .cli import main

raise SystemExit(main())
