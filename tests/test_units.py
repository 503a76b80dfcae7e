"""Unit parsers and formatters: hand-derived values, round trips, every bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnum_lib.base.validate import excerpt
from magnum_lib.units import (
    INTERCONNECTS,
    Interconnect,
    format_bandwidth,
    format_duration,
    format_size,
    parse_bandwidth,
    parse_duration,
    parse_interconnect,
    parse_size,
)

# ---------------------------------------------------------------- known values

@pytest.mark.parametrize("text, expected", [
    ("80GB", 80 * 10**9),
    ("2.1GB", 2_100_000_000),
    ("512MiB", 512 * 2**20),
    ("1.5TB", 1_500_000_000_000),
    ("64KiB", 65_536),
    ("1GiB", 1_073_741_824),
    (" 80 GB ", 80 * 10**9),
    ("123", 123),
    ("0B", 0),
    ("1e3B", 1000),
    (".5KB", 500),
    (4096, 4096),
    (np.int64(7), 7),
    (2.5e9, 2_500_000_000),
])
def test_parse_size_known(text, expected):
    assert parse_size(text) == expected
    assert isinstance(parse_size(text), int)


@pytest.mark.parametrize("text, expected_ns", [
    ("100ms", 100_000_000),
    ("420us", 420_000),
    ("420\u00b5s", 420_000),   # micro sign
    ("420\u03bcs", 420_000),   # Greek mu
    ("30s", 30 * 10**9),
    ("2m", 120 * 10**9),
    ("2min", 120 * 10**9),
    ("1h", 3600 * 10**9),
    ("250ns", 250),
    ("1.5 ms", 1_500_000),
    (0.25, 250_000_000),       # numbers are seconds
    (3, 3 * 10**9),
    (np.float64(0.001), 1_000_000),
])
def test_parse_duration_known(text, expected_ns):
    assert parse_duration(text) == expected_ns


@pytest.mark.parametrize("text, expected", [
    ("40GB/s", 40e9),
    ("900 GB/s", 900e9),
    ("3.35TB/s", 3.35e12),
    ("400Gb/s", 50e9),
    ("400Gbps", 50e9),
    ("100Mbit/s", 12.5e6),
    ("1GiB/s", 2.0**30),
    ("5", 5.0),
    (12.5, 12.5),
])
def test_parse_bandwidth_known(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("text, key, per_dir", [
    ("nvlink_3", "nvlink_3", 300e9),        # A100: 600 GB/s both directions
    ("NVLink-4", "nvlink_4", 450e9),        # H100: 900 GB/s both directions
    ("nvlink4", "nvlink_4", 450e9),
    ("pcie_4", "pcie_4", 16e9 * 16 * 128 / 130 / 8),
    ("PCIe 5", "pcie_5", 32e9 * 16 * 128 / 130 / 8),
    ("pcie_5_x8", "pcie_5_x8", 32e9 * 8 * 128 / 130 / 8),
    ("infinity_fabric", "infinity_fabric", 896e9 / 2),
    ("ethernet_100g", "ethernet_100g", 100e9 / 8),
    ("infiniband_ndr", "infiniband_ndr", 400e9 / 8),
])
def test_parse_interconnect_known(text, key, per_dir):
    ic = parse_interconnect(text)
    assert ic.name == key
    assert ic.per_direction_Bps == pytest.approx(per_dir, rel=1e-3)
    assert ic.bidirectional_Bps == pytest.approx(2 * per_dir, rel=1e-3)
    assert parse_interconnect(ic) is ic


def test_every_interconnect_has_a_source():
    for name, ic in INTERCONNECTS.items():
        assert isinstance(ic, Interconnect) and ic.name == name
        assert ic.per_direction_Bps > 0 and ic.source and ic.description
        assert parse_interconnect(name) is ic


def test_formatters_known():
    assert format_size(80 * 10**9) == "80 GB"
    assert format_size(2**30, binary=True) == "1 GiB"
    assert format_size(999) == "999 B"
    assert format_size(123_456_789, digits=None) == "123.456789 MB"
    assert format_duration(420_000) == "420us"
    assert format_duration(90 * 10**9) == "90s"
    assert format_duration(3 * 3600 * 10**9) == "3h"
    assert format_bandwidth(3.35e12) == "3.35 TB/s"


# ---------------------------------------------------------------- round trips

@given(st.integers(min_value=0, max_value=10**21), st.booleans())
def test_size_round_trip_exact(n, binary):
    assert parse_size(format_size(n, binary=binary, digits=None)) == n


@given(st.integers(min_value=0, max_value=10**21), st.booleans())
def test_size_round_trip_rounded(n, binary):
    back = parse_size(format_size(n, binary=binary))
    # 3 decimals of a unit no larger than the value: relative error <= 5e-4 (+1 byte rounding)
    assert abs(back - n) <= 5e-4 * n + 1


@given(st.integers(min_value=0, max_value=10**18))
def test_duration_round_trip(ns):
    assert parse_duration(format_duration(ns, digits=None)) == ns
    assert abs(parse_duration(format_duration(ns)) - ns) <= 5e-4 * ns + 1


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_duration_seconds_pass_through(seconds):
    assert abs(parse_duration(seconds) - seconds * 1e9) <= 1


@given(st.integers(min_value=0, max_value=10**15))
def test_bandwidth_round_trip(n):
    assert parse_bandwidth(format_bandwidth(n, digits=None)) == pytest.approx(n, rel=1e-12)


@given(st.text(max_size=12))
@settings(max_examples=300)
def test_parsers_fail_only_with_valueerror(text):
    """Arbitrary text either parses to a non-negative value or raises ValueError."""
    for parse in (parse_size, parse_duration, parse_bandwidth):
        try:
            value = parse(text)
        except ValueError as exc:
            assert excerpt(text) in str(exc)  # quoted, cut to a short excerpt when long
        else:
            assert value >= 0 and math.isfinite(value)
    try:
        parse_interconnect(text)
    except ValueError as exc:
        assert "expected" in str(exc)


# ---------------------------------------------------------------- bad inputs

BAD_TEXT = [
    (parse_size, ["80XB", "", "   ", "-5GB", "nan", "inf", "NaNGB", "infGB", "1.5", "GB", "5 G B", "1e", "--5GB",
                  "80gb", "80 Gb", "1e40GB", "1e999999999KB"], "B, KB, MB, GB, TB, PB, KiB, MiB, GiB"),
    (parse_duration, ["100", "5 parsecs", "-1s", "", "nan s", "1ks", "ms", "1 s s", "1e99999s"], "ns, us"),
    (parse_bandwidth, ["40GB", "40 GB/min", "-1GB/s", "", "x", "GB/s", "nanGB/s", "40XB/s", "1e50GB/s"], "GB/s"),
    (parse_interconnect, ["nvlink_9", "pcie_5_x3", "", "token_ring", "pcie"], "nvlink_4"),
]


@pytest.mark.parametrize("parse, text, accepted",
                         [(parse, text, acc) for parse, texts, acc in BAD_TEXT for text in texts])
def test_parsers_reject_text(parse, text, accepted):
    """The message quotes the text and lists what is accepted."""
    with pytest.raises(ValueError) as info:
        parse(text)
    msg = str(info.value)
    assert repr(text) in msg and accepted in msg


@pytest.mark.parametrize("parse", [parse_size, parse_duration, parse_bandwidth])
@pytest.mark.parametrize("value", [-1, -0.5, float("nan"), float("inf"), float("-inf"), 1e300])
def test_parsers_reject_numbers(parse, value):
    with pytest.raises(ValueError, match="cannot parse (size|duration|bandwidth)"):
        parse(value)


@pytest.mark.parametrize("parse", [parse_size, parse_duration, parse_bandwidth, parse_interconnect])
@pytest.mark.parametrize("value", [None, True, [1]])
def test_parsers_reject_wrong_types(parse, value):
    with pytest.raises(TypeError):
        parse(value)


def test_field_name_in_message():
    with pytest.raises(ValueError, match=r"^memory: cannot parse size '80XB'"):
        parse_size("80XB", field="memory")
    with pytest.raises(ValueError, match=r"^--decision-time: cannot parse duration"):
        parse_duration("fast", field="--decision-time")


@pytest.mark.parametrize("fmt", [format_size, format_duration, format_bandwidth])
def test_formatters_reject(fmt):
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            fmt(bad)
    with pytest.raises(TypeError):
        fmt("80GB")


@pytest.mark.parametrize("parse", [parse_size, parse_duration, parse_bandwidth, parse_interconnect])
def test_a_100kB_value_gives_a_short_message(parse):
    with pytest.raises(ValueError) as info:
        parse("9" * 50_000 + "x" * 50_000)
    assert len(str(info.value)) < 1000 and "(100002 chars)" in str(info.value)  # and fast: no backtracking
