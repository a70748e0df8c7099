"""Tests of fpemu.accumulator, the matrix unit: one file per module (test_<module>.py).

A package, so that its file names may repeat those of other test folders; its modules import
the shared helpers of tests/ (``reference``, ``mma_oracle``, ...) by their plain names, as
tests/ is on the path (pytest's rootdir-based import inserts the first folder above the
package)."""
