"""Tests of fpemu.codec, one file per module (test_<module>.py, or test_<module>_<aspect>.py
where a module's tests are many). A package, so that two packages' test files may share a
module's name (tests/codec/test_conventions.py, tests/mx/test_conventions.py); shared helpers
(reference.py, random_formats.py, mx_helpers.py) are imported from tests/ as before."""
