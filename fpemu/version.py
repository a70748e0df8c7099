"""fpemu's version (read by the package metadata in pyproject.toml and written into files)."""

__version__ = "0.2.0"
