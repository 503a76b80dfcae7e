"""Units at the edges: sizes, durations, bandwidths and interconnect classes.

Inside the library memory is an ``int`` number of bytes, time an ``int`` number of
nanoseconds and bandwidth a ``float`` number of bytes per second. These parsers turn
what a person types ("80GB", "100ms", "900 GB/s", "nvlink_4") into those, and the
formatters turn them back into readable text.

Conventions (everywhere in magnum_lib):

* decimal prefixes are powers of ten: ``1 GB = 10**9`` bytes; binary prefixes are powers
  of two: ``1 GiB = 2**30`` bytes;
* a lower-case ``b`` in a bandwidth means bits: ``400Gb/s = 50 GB/s``;
* every bad input raises :class:`ValueError` (:class:`TypeError` for a wrong type) whose
  message quotes the text and lists what is accepted.

Decimal arithmetic is used while parsing so that "2.1GB" is exactly 2,100,000,000 bytes
rather than a float rounding of it.
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import cast

from magnum_lib.base.validate import excerpt

__all__ = [
    "Interconnect",
    "INTERCONNECTS",
    "parse_size",
    "parse_duration",
    "parse_bandwidth",
    "parse_interconnect",
    "format_size",
    "format_duration",
    "format_bandwidth",
]

# Unambiguous (digits, then an optional fraction): no quadratic backtracking on long digit runs.
_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
#: Longer text is refused before any regular expression sees it ("80GB" is 4 characters).
MAX_TEXT = 100

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50,
}
_SIZE_ACCEPTED = "a number followed by B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB (a bare integer is bytes)"

DURATION_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3,  # micro sign and Greek mu both appear in the wild
    "ms": 10**6,
    "s": 10**9, "sec": 10**9,
    "m": 60 * 10**9, "min": 60 * 10**9,
    "h": 3600 * 10**9,
}
_DURATION_ACCEPTED = "a number followed by ns, us (or \u00b5s), ms, s, m (or min), h; or a number of seconds"

# Bandwidth: bytes (upper-case B) or bits (lower-case b / "bit"), per second.
_BW_PREFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
              "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_BANDWIDTH_RE = re.compile(
    r"^\s*" + _NUMBER + r"\s*(?P<prefix>[KMGT]i?|)(?P<unit>B|b|bit)(?:/s|ps)\s*$"
)
_BANDWIDTH_ACCEPTED = ("a number followed by B/s, KB/s, MB/s, GB/s, TB/s (bytes), KiB/s ... TiB/s, "
                       "or Kb/s, Mb/s, Gb/s, Tb/s, Gbps, Gbit/s (bits); a bare number is bytes/s")


def _fail(kind: str, text: object, accepted: str, why: str = "", field: str | None = None) -> ValueError:
    prefix = f"{field}: " if field else ""
    reason = f" ({why})" if why else ""
    return ValueError(f"{prefix}cannot parse {kind} {excerpt(text)}{reason}: expected {accepted}")


def _split(text: str, kind: str, accepted: str, field: str | None) -> tuple[Decimal, str]:
    """Split '2.1 GB' into (Decimal('2.1'), 'GB'); reject empty, negative, nan, inf."""
    _check_length(text, kind, accepted, field)
    m = re.match(r"^\s*" + _NUMBER + r"\s*(?P<unit>\S*)\s*$", text)
    if m is None:
        raise _fail(kind, text, accepted, field=field)
    value = Decimal(m.group("num"))
    _check_range(value, kind, text, accepted, field)
    return value, m.group("unit")


def _check_length(text: str, kind: str, accepted: str, field: str | None) -> None:
    if len(text) > MAX_TEXT:
        raise _fail(kind, text, accepted, f"longer than {MAX_TEXT} characters", field)


_MAX_EXPONENT = 30  # 10^30 bytes or ns is far beyond any fleet; bigger text is a typo


def _check_range(value: Decimal, kind: str, text: object, accepted: str, field: str | None) -> None:
    if value < 0:
        raise _fail(kind, text, accepted, "negative values are not accepted", field)
    if value != 0 and value.adjusted() > _MAX_EXPONENT:
        raise _fail(kind, text, accepted, f"larger than 1e{_MAX_EXPONENT}", field)


def _check_number(value: object, kind: str, accepted: str, field: str | None) -> numbers.Real:
    """Numbers passed straight through must be real, finite and non-negative (returned as is)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        prefix = f"{field}: " if field else ""
        raise TypeError(f"{prefix}{kind} must be a string or a number, got {type(value).__name__} {excerpt(value)}")
    if not math.isfinite(value):
        raise _fail(kind, value, accepted, "not finite", field)
    if value < 0:
        raise _fail(kind, value, accepted, "negative values are not accepted", field)
    if cast(float, value) > 10.0**_MAX_EXPONENT:  # a Real (checked above)
        raise _fail(kind, value, accepted, f"larger than 1e{_MAX_EXPONENT}", field)
    return value


def _to_decimal(value: numbers.Real) -> Decimal:
    # numpy scalars are not int/float subclasses in every case; Decimal needs plain ones.
    return Decimal(int(value)) if isinstance(value, numbers.Integral) else Decimal(float(value))


def _round_int(value: Decimal) -> int:
    return int(value.to_integral_value())  # round half to even, exact for huge values


def parse_size(text: object, *, field: str | None = None) -> int:
    """Parse a memory size into an int number of bytes (rounded to the nearest byte).

    Parameters
    ----------
    text : str or int or float
        ``"80GB"`` (80 * 10**9), ``"2.1GB"``, ``"512MiB"`` (512 * 2**20), ``"1.5TB"``,
        ``"64KiB"``; a bare integer (string or number) is a count of bytes.
    field : str, optional
        Name of the setting, quoted at the start of any error message.
    """
    if not isinstance(text, str):
        return _round_int(_to_decimal(_check_number(text, "size", _SIZE_ACCEPTED, field)))
    value, unit = _split(text, "size", _SIZE_ACCEPTED, field)
    if unit == "":
        if value != value.to_integral_value():
            raise _fail("size", text, _SIZE_ACCEPTED, "a bare number must be a whole number of bytes", field)
        return int(value)
    if unit not in SIZE_UNITS:
        raise _fail("size", text, _SIZE_ACCEPTED, field=field)
    return _round_int(value * SIZE_UNITS[unit])


def parse_duration(text: object, *, field: str | None = None) -> int:
    """Parse a duration into an int number of nanoseconds (rounded to the nearest ns).

    Parameters
    ----------
    text : str or int or float
        ``"100ms"``, ``"420us"`` (also ``"420µs"``), ``"30s"``, ``"2m"``, ``"1h"``,
        ``"250ns"``. A number (int or float) is taken as seconds, the public API's unit.
        A bare number in a string is refused because its unit would be a guess.
    field : str, optional
        Setting name for error messages.
    """
    if not isinstance(text, str):
        return _round_int(_to_decimal(_check_number(text, "duration", _DURATION_ACCEPTED, field)) * 10**9)
    value, unit = _split(text, "duration", _DURATION_ACCEPTED, field)
    if unit not in DURATION_UNITS:
        why = "a unit is required" if unit == "" else ""
        raise _fail("duration", text, _DURATION_ACCEPTED, why, field)
    return _round_int(value * DURATION_UNITS[unit])


def parse_bandwidth(text: object, *, field: str | None = None) -> float:
    """Parse a bandwidth into bytes per second.

    Parameters
    ----------
    text : str or int or float
        ``"40GB/s"``, ``"900 GB/s"``, ``"3.35TB/s"``, ``"400Gb/s"`` or ``"400Gbps"``
        (bits: divided by 8), ``"10GiB/s"``. A number is taken as bytes per second.
    field : str, optional
        Name of the setting, quoted at the start of any error message.

    Returns
    -------
    float
        Bytes per second.
    """
    if not isinstance(text, str):
        return float(_check_number(text, "bandwidth", _BANDWIDTH_ACCEPTED, field))
    _check_length(text, "bandwidth", _BANDWIDTH_ACCEPTED, field)
    m = _BANDWIDTH_RE.match(text)
    if m is None:
        # A bare number is bytes/s, as for a number passed directly.
        value, unit = _split(text, "bandwidth", _BANDWIDTH_ACCEPTED, field)
        if unit:
            raise _fail("bandwidth", text, _BANDWIDTH_ACCEPTED, field=field)
        return float(value)
    value = Decimal(m.group("num"))
    _check_range(value, "bandwidth", text, _BANDWIDTH_ACCEPTED, field)
    scale = Decimal(_BW_PREFIX[m.group("prefix")])
    if m.group("unit") != "B":
        scale /= 8  # bits to bytes
    return float(value * scale)


# ---------------------------------------------------------------------------
# Interconnects
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Interconnect:
    """A link class between devices, with its peak bandwidth per direction.

    Attributes
    ----------
    name : str
        Canonical class name, e.g. ``"nvlink_4"`` or ``"pcie_5_x8"``.
    per_direction_Bps : float
        Peak bytes per second in one direction (vendors often quote both directions
        added together; those figures are halved here).
    description : str
        What the class is and how the figure was derived.
    source : str
        Public source of the figure.
    """

    name: str
    per_direction_Bps: float
    description: str
    source: str

    @property
    def bidirectional_Bps(self) -> float:
        """Both directions added together, as datasheets usually quote NVLink."""
        return 2.0 * self.per_direction_Bps


def _ic(name: str, gbps_per_dir: float, description: str, source: str) -> Interconnect:
    return Interconnect(name, gbps_per_dir * 1e9, description, source)


_NV_H100 = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_PCIE = "https://pcisig.com/specifications (x16 raw rate after 128b/130b encoding)"

INTERCONNECTS: dict[str, Interconnect] = {ic.name: ic for ic in [
    _ic("nvlink_1", 80, "NVLink 1 (P100 SXM2): 160 GB/s both directions, 4 links",
        "https://images.nvidia.com/content/pdf/tesla/whitepaper/pascal-architecture-whitepaper.pdf"),
    _ic("nvlink_2", 150, "NVLink 2 (V100 SXM2): 300 GB/s both directions, 6 links",
        "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"),
    _ic("nvlink_3", 300, "NVLink 3 (A100 SXM4): 600 GB/s both directions, 12 links",
        "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
        "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"),
    _ic("nvlink_4", 450, "NVLink 4 (H100 SXM5): 900 GB/s both directions, 18 links", _NV_H100),
    _ic("pcie_3", 15.754, "PCIe 3.0 x16: 8 GT/s x 16 lanes x 128/130 / 8", _PCIE),
    _ic("pcie_4", 31.508, "PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 / 8", _PCIE),
    _ic("pcie_5", 63.015, "PCIe 5.0 x16: 32 GT/s x 16 lanes x 128/130 / 8", _PCIE),
    _ic("infinity_fabric", 448, "AMD Infinity Fabric (MI300X): 7 links x 128 GB/s both directions = 896 GB/s",
        "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
        "amd-instinct-mi300x-data-sheet.pdf"),
    _ic("ethernet_100g", 12.5, "100 Gb/s Ethernet NIC: 100e9 / 8", "IEEE 802.3ba/802.3bj"),
    _ic("ethernet_400g", 50, "400 Gb/s Ethernet NIC: 400e9 / 8", "IEEE 802.3bs"),
    _ic("infiniband_hdr", 25, "InfiniBand HDR port, 200 Gb/s: 200e9 / 8",
        "https://www.infinibandta.org/infiniband-roadmap/"),
    _ic("infiniband_ndr", 50, "InfiniBand NDR port, 400 Gb/s: 400e9 / 8",
        "https://www.infinibandta.org/infiniband-roadmap/"),
]}

_IC_ACCEPTED = ", ".join(INTERCONNECTS) + " (PCIe may take a lane count, e.g. pcie_5_x8)"


def parse_interconnect(text: object, *, field: str | None = None) -> Interconnect:
    """Parse an interconnect class name.

    Parameters
    ----------
    text : str or Interconnect
        ``"nvlink_3"``, ``"NVLink-4"``, ``"nvlink4"``, ``"pcie_5"``, ``"pcie_5_x8"``
        (bandwidth scaled by lanes / 16), ``"infinity_fabric"``, ``"ethernet_100g"``,
        ``"infiniband_ndr"``. Case, hyphens and spaces do not matter.
    field : str, optional
        Name of the setting, quoted at the start of any error message.
    """
    if isinstance(text, Interconnect):
        return text
    if not isinstance(text, str):
        prefix = f"{field}: " if field else ""
        raise TypeError(f"{prefix}interconnect must be a string, got {type(text).__name__} {excerpt(text)}")
    _check_length(text, "interconnect", _IC_ACCEPTED, field)
    key = re.sub(r"[\s\-]+", "_", text.strip().lower())
    key = re.sub(r"^(nvlink|pcie)(\d)", r"\1_\2", key)  # "nvlink4" -> "nvlink_4"
    lanes = 16
    m = re.match(r"^(pcie_\d)_?x(\d+)$", key)
    if m:
        key, lanes = m.group(1), int(m.group(2))
        if lanes not in (1, 2, 4, 8, 16):
            raise _fail("interconnect", text, _IC_ACCEPTED, "PCIe lanes must be 1, 2, 4, 8 or 16", field)
    if key not in INTERCONNECTS:
        raise _fail("interconnect", text, _IC_ACCEPTED, field=field)
    ic = INTERCONNECTS[key]
    if lanes == 16:
        return ic
    return Interconnect(f"{key}_x{lanes}", ic.per_direction_Bps * lanes / 16,
                        f"{ic.description}, scaled to x{lanes}", ic.source)


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------

def _format(value: Decimal, units: list[tuple[str, int]], digits: int | None, sep: str) -> str:
    """Pick the largest unit not above ``value`` and print it with ``digits`` decimals.

    ``digits=None`` prints the exact decimal expansion (it always terminates: every unit
    is a product of powers of 2 and 5), so that parsing the text gives the value back.
    """
    name, scale = units[0]
    for name_i, scale_i in units:
        if value >= scale_i:
            name, scale = name_i, scale_i
    with localcontext() as ctx:
        ctx.prec = 80
        q = value / Decimal(scale)
        if digits is not None:
            q = q.quantize(Decimal(1).scaleb(-digits))
        text = format(q, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}{sep}{name}"


def _as_count(value: object, kind: str) -> Decimal:
    return _to_decimal(_check_number(value, kind, "a non-negative finite number", None))


def format_size(nbytes: float, *, binary: bool = False, digits: int | None = 3, sep: str = " ") -> str:
    """Readable size: ``format_size(80 * 10**9) == "80 GB"``.

    Parameters
    ----------
    nbytes : int or float
        Bytes (non-negative).
    binary : bool
        Use KiB, MiB, ... (powers of 2) instead of KB, MB, ... (powers of 10).
    digits : int or None
        Decimals kept after rounding; ``None`` keeps them all (exact round trip).
    sep : str
        Between number and unit; ``parse_size`` accepts any spacing.
    """
    names = ["KiB", "MiB", "GiB", "TiB", "PiB"] if binary else ["KB", "MB", "GB", "TB", "PB"]
    units = [("B", 1)] + [(n, SIZE_UNITS[n]) for n in names]
    return _format(_as_count(nbytes, "size"), units, digits, sep)


def format_duration(ns: float, *, digits: int | None = 3, sep: str = "") -> str:
    """Readable duration from nanoseconds: ``format_duration(420_000) == "420us"``.

    Units used: ns, us, ms, s, m (minutes, from 120 s) and h (from 2 h), so that
    "90s" stays "90s" rather than "1.5m". ``digits=None`` gives an exact round trip.
    """
    units = [("ns", 1), ("us", 10**3), ("ms", 10**6), ("s", 10**9)]
    value = _as_count(ns, "duration")
    if value >= 120 * 10**9:
        units.append(("m", 60 * 10**9))
    if value >= 2 * 3600 * 10**9:
        units.append(("h", 3600 * 10**9))
    return _format(value, units, digits, sep)


def format_bandwidth(Bps: float, *, digits: int | None = 3, sep: str = " ") -> str:
    """Readable bandwidth in decimal bytes per second: ``"3.35 TB/s"``."""
    units = [("B/s", 1), ("KB/s", 10**3), ("MB/s", 10**6), ("GB/s", 10**9), ("TB/s", 10**12)]
    return _format(_as_count(Bps, "bandwidth"), units, digits, sep)
