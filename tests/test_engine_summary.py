"""The queue run's summary: percentiles as numpy computes them, seconds-to-ns at the edge,
and the command line building only the parser it needs."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from magnum_lib import cli
from magnum_lib.engine import distributions, metrics, simulate_queue

QS = st.lists(st.floats(0, 100), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.int64, st.integers(1, 400), elements=st.integers(-2**52, 2**52)), QS)
def test_percentiles_equal_numpy_on_integers(values, qs):
    assert metrics.percentiles_s(values, qs) == tuple(float(v) / 1e9 for v in np.percentile(values, qs))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 400), elements=st.floats(-1e12, 1e12)), QS)
def test_percentiles_equal_numpy_on_floats(values, qs):
    assert metrics.percentiles_s(values, qs) == tuple(float(v) / 1e9 for v in np.percentile(values, qs))


def test_percentiles_do_not_reorder_the_input_and_check_their_arguments():
    values = np.array([5, 1, 4, 2, 3], dtype=np.int64)
    assert metrics.percentiles_s(values, (0, 50, 100)) == (1e-9, 3e-9, 5e-9)
    assert values.tolist() == [5, 1, 4, 2, 3]
    with pytest.raises(ValueError, match="no values"):
        metrics.percentiles_s(np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match=r"in \[0, 100\]"):
        metrics.percentiles_s(values, (101,))


def test_to_ns_rounds_and_refuses_what_int64_cannot_hold():
    assert distributions.to_ns(1.5) == 1_500_000_000
    assert distributions.to_ns([0.1, 2e-9, -1.0]).tolist() == [100_000_000, 2, -1_000_000_000]
    for bad in (np.nan, [1.0, np.inf], 1e300, -9.3e9, [0.0, 9.3e9]):
        with pytest.raises(ValueError, match="finite and within the int64"):
            distributions.to_ns(bad)
    assert distributions.to_ns(9.2e9) == 9_200_000_000 * 10**9


def test_to_ns_overwrite_reuses_only_a_writable_float64_array():
    s = np.array([0.25, 1.0])
    ns = distributions.to_ns(s, overwrite=True)
    assert ns.tolist() == [250_000_000, 1_000_000_000] and s.tolist() == [2.5e8, 1e9]
    kept = np.array([0.25, 1.0])
    distributions.to_ns(kept)  # default: the input is left alone
    assert kept.tolist() == [0.25, 1.0]
    ints = np.array([1, 2])
    assert distributions.to_ns(ints, overwrite=True).tolist() == [10**9, 2 * 10**9] and ints.tolist() == [1, 2]


def test_seconds_arrays_match_the_ns_arrays_and_are_read_only():
    r = simulate_queue(3, 2.0, 1.0, jobs=500, seed=4)
    np.testing.assert_array_equal(r.wait, r.wait_ns / 1e9)
    np.testing.assert_array_equal(r.time_in_system, r.time_in_system_ns / 1e9)
    assert r.wait is r.wait  # converted once
    for a in (r.wait, r.time_in_system, r.wait_ns, r.time_in_system_ns):
        with pytest.raises(ValueError):
            a[0] = 0
    assert r.p99 == float(np.percentile(r.time_in_system_ns, 99)) / 1e9


def _subcommands(parser):
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return set(action.choices)


def test_each_command_module_registers_the_command_named_after_it():
    # main() builds only the named command's parser, found by this naming rule
    for name in cli.command_names():
        word = name.replace("_", "-")
        module = cli._module_of(word)
        assert module is not None and _subcommands(cli.build_parser([module])) == {word}
    assert cli._module_of("--version") is None and cli._module_of("nope") is None
    assert cli._module_of("_common") is None


def test_help_and_unknown_commands_still_list_every_command(capsys):
    assert cli.main(["nope"]) == 2
    err = capsys.readouterr().err
    assert all(f"'{n.replace('_', '-')}'" in err for n in cli.command_names())
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli.main(["--help"]) == 0
    assert all(n.replace("_", "-") in out.getvalue() for n in cli.command_names())
