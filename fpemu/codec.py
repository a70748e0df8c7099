"""Encode, decode and quantize (under construction)."""
import numpy as np

def encode(x, fmt, *, rounding="nearest_even", overflow=None, nan=None, rng=None):
    raise NotImplementedError

def decode(codes, fmt, *, dtype=np.float64):
    raise NotImplementedError

def quantize(x, fmt, *, rounding="nearest_even", overflow=None, nan=None, rng=None):
    raise NotImplementedError

def explain(x, fmt, *, rounding="nearest_even", overflow=None, nan=None, color=False):
    raise NotImplementedError
