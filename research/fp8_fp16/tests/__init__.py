"""Tests of research.fp8_fp16, one file per module (test_<module>.py), kept beside the research
they test; collected by the default run (pyproject's testpaths name research/)."""
