"""The FP8 fp16-output campaign of issue 18, kept out of the installed fpemu (README.md here).

Why Hopper and Blackwell FP8 GEMMs writing fp16 disagree with every block model of
:class:`fpemu.accumulator.Accumulator`, and which model they follow instead. The modules, in
the order the data flows: ``staged`` (the model description, :class:`Staged`, and the named
hypotheses), ``staged_kernel`` (its vectorized arithmetic, on :func:`fpemu.arith.aligned_sum`),
``spaces`` (search spaces as data), ``staged_search`` (one model for the columns of several
dumps, ranked; residual rows), ``staged_report`` (the text ``fit`` prints); ``fp8_probes``,
``fp8_devices``, ``fp8_judge`` and ``fp8_run`` (``probe``: the experiment rows, the GPU paths
and fake devices, the verdicts and records, the run); ``cli`` (``python -m research.fp8_fp16``).

What it found is a preset now: the h100/b200 accumulators' ``fp16_output`` (:mod:`fpemu.accumulator.units`).

>>> from research.fp8_fp16.staged import NAMED
>>> NAMED["hopper-fp8-fp16"].stage, NAMED["hopper-fp8-fp16"].order
(16, 'bit1')
"""
