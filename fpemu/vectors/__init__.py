"""Golden test vectors: fpemu's answers written to a file, for testing other kernels against.

Four kinds of vector files, each as ``.npz``, ``.csv``, ``.json``, ``.bin`` (raw
little-endian arrays after a JSON header line, which C++ reads without a JSON library) or
``.h`` (a C header of ``static const`` arrays, for small sets):

* casts (:func:`cast_vectors`): input bit patterns (float32, or float64 with
  ``source="f64"``), the expected code and the expected decoded value, for one format and one
  set of codec options;
* block formats (:func:`block_vectors`, MX and NVFP4): one block per row: input bits, the
  expected scale code, element codes and dequantized values;
* dot products (:func:`dot_vectors`): rows of ``a``, ``b`` (fp32 bit patterns of values in the
  input format), ``c`` and the expected ``d`` for a named accumulator, in the layout of the
  hardware dumps (so ``fpemu fit`` reads them too);
* block-scaled GEMMs (:func:`block_gemm_vectors`, ``fpemu vectors FMT --accumulator b200``):
  A and B as the buffers a Blackwell kernel reads (packed codes, scales in the 128x4 tiles of
  cuBLASLt and CUTLASS), c, and the expected D of a block-scaled model.

Every file carries its metadata (what produced it, with which options), and
:func:`verify_vectors` (``fpemu verify FILE``) reads a file back, re-runs fpemu and counts
identical results; a file that is not a vector file raises :class:`VectorFileError` (a
``ValueError``) naming it and what it lacks:

>>> import tempfile, os
>>> v = cast_vectors("e4m3", kind="edge", overflow="saturate")
>>> path = os.path.join(tempfile.mkdtemp(), "e4m3.csv")
>>> write_vectors(v, path)
>>> n, same = verify_vectors(path); n == same == len(v["input_bits"])
True

The package, in the order the data flows: ``exhaustive`` (:func:`exhaustive_inputs`), ``make``
(the vectors: :func:`cast_vectors`, :func:`block_vectors`, :func:`dot_vectors`), ``block_gemm``
(:func:`block_gemm_vectors`), ``files``
(:func:`write_vectors`, :func:`read_vectors`, :func:`verify_vectors`, and
:func:`atomic_output`, which writes any output file all at once) with ``binary`` and
``cheader`` (the ``.bin`` and ``.h`` layouts), and ``cli`` (``fpemu vectors``, ``fpemu verify``). The edge, random and matrix inputs come from :mod:`fpemu.cases`.
"""

from ..outputs import atomic_output, check_output_path
from .block_gemm import block_gemm_vectors
from .cheader import MAX_HEADER_BYTES
from .exhaustive import exhaustive_inputs
from .files import VectorFileError, read_vectors, verify_vectors, write_vectors
from .make import block_vectors, cast_vectors, dot_vectors

__all__ = ["cast_vectors", "block_vectors", "dot_vectors", "block_gemm_vectors", "exhaustive_inputs", "write_vectors", "read_vectors",
           "verify_vectors", "VectorFileError", "atomic_output", "check_output_path", "MAX_HEADER_BYTES"]  # fmt: skip
