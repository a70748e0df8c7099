"""Tests of fpemu.codec.fast, the speed-only paths: each against the generic kernel."""
