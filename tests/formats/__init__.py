"""Tests of fpemu.formats, one file per module (test_<module>.py, or test_<module>_<aspect>.py); a
package, so that file names may repeat those of other test folders."""
