"""The codec's speed-only paths: each gives the generic kernel's codes (or values) bit for bit
on the inputs the dispatch (:func:`fpemu.codec.encode_path`) sends it, and is tested against
the generic kernel over them (tests/codec/fast/). None decides where it applies: the dispatch
does, in one place.

* :mod:`.input_table`: float16 and (u)int8/16 input by one gather from a table of every bit
  pattern's code (``input_table``).
* :mod:`.fp32_table`: float32 into formats of at most 6 mantissa bits by one gather from the
  17-bit table of (top 16 bits, sticky bit) patterns (``fp32_table``).
* :mod:`.top_half`: the same function by uint16 arithmetic on the top half of each pattern,
  where an exhaustive check against the table passes (``top_half``); also MX's elements
  divided by their block's power of two, without the division.
* :mod:`.float32_alike`: float64 (and float16) input made float32 so that it rounds to the
  same codes, for the three float32 paths above and below.
* :mod:`.numpy_cast`: fp16/fp32/fp64 by numpy's own correctly rounded cast: under RNE (or
  exact) as it is (``numpy_cast``), under the directed roundings, odd and nearest-away
  stepped one unit where it went against the mode (``cast_directed``).
* :mod:`.prefix_rne`: bf16/tf32 under round-to-nearest-even by integer rounding of the
  float32 bit pattern (``prefix_rne``), and under the other deterministic roundings below
  the format's largest value (``prefix_directed``).
* :mod:`.in_range`: overflow rules and NaN policies at the speed of the path above that
  serves the same rounding under the format's defaults, the generic kernel for what lies
  outside the format's range (``in_range``).
* :mod:`.float_fields`: float16/32/64 under any rounding (stochastic included) and option,
  by the generic kernel's rounding on the fields of the bit pattern (``float_fields``).
* :mod:`.float_arithmetic`: quantize's values by float32 addition of a magic number
  (``magic_number``) and by float64 scaling to integers (``quantum_scaling``).
"""
