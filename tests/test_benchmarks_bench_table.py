"""benchmarks/bench_table.py --busy: the neighbour it runs is really there while the block
runs (it moves memory, and says how fast), and it is gone afterwards; the side-by-side report
judges a goal by the worse of the idle and busy ratios."""

from __future__ import annotations

import math

from script_helpers import load_script


def _bench():
    return load_script("benchmarks/bench_table.py")


def test_the_memory_load_runs_during_the_block_and_stops_after():
    bench = _bench()
    with bench.memory_load(1) as rates:
        assert rates == []  # filled when the neighbours stop
    assert len(rates) == 1 and math.isfinite(rates[0]) and rates[0] > 0


def test_a_goal_is_met_only_when_both_columns_meet_it(capsys):
    bench = _bench()
    rows = [("fast idle, slow busy", None, "peer", None, 2.0), ("fast both", None, "peer", None, 2.0),
            ("no goal", None, "peer", None, None)]
    idle = [[1.0, 1.0, 3.0, 3.0], [1.0, 1.0, 3.0, 3.0], [1.0, 1.0, 1.0, 1.0]]
    busy = [[2.0, 2.0, 3.0, 3.0], [1.0, 1.0, 2.5, 2.5], [1.0, 1.0, 1.0, 1.0]]
    bench.report_busy(rows, idle, busy, 10**6, "a test")
    lines = capsys.readouterr().out.splitlines()[2:]
    # label words, then fpemu, peer, ratio idle, fpemu, peer, ratio busy (Melem/s of 10**6 elements)
    assert lines[0].split()[-8:] == ["1", "0", "3.00", "0", "0", "1.50", ">=2x", "NO"]
    assert lines[1].split()[-4:] == ["0", "2.50", ">=2x", "yes"]
    assert lines[2].split()[-2:] == ["1", "1.00"]
