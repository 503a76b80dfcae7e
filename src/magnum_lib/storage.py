"""The storage hierarchy and cold starts: moving a model's weights to a device (claim C48).

The article (C48) says that with CXL-attached, disaggregated memory the scheduler can
"schedule the data to the GPU", which "could eliminate cold-start latency entirely". A
cold start has to copy the weights into device memory at least once, over the slowest
link on the path, so its floor is ``bytes / bandwidth``: CXL memory shortens that path
(it is byte-addressable memory on a PCIe 5.0 link, not a file system), it does not remove
it. Only keeping the weights resident removes the copy.

Model: ``cold_start_s = init_s + bytes / (min(tier bandwidth, device host link) / sharers)``
where ``sharers`` devices load from the same tier at once. Figures are peak, per
direction; the sources are named beside each. ``init_s`` (runtime and context start,
graph load) is ours: 0.5 s by default, a parameter.
"""
from __future__ import annotations

from dataclasses import dataclass

from magnum_lib.base.validate import ParameterError, check_choice, check_int, check_positive
from magnum_lib.hardware import load_catalog
from magnum_lib.units import parse_interconnect

__all__ = ["Tier", "TIERS", "HOST_LINKS", "host_link_Bps", "cold_start_s", "DEFAULT_INIT_S"]

DEFAULT_INIT_S = 0.5
"""Runtime and context start plus graph load, in seconds (our assumption, not measured)."""

MAX_MODEL_BYTES = 10**15  # 1 PB: far beyond any model; keeps the arithmetic sane


@dataclass(frozen=True)
class Tier:
    """Where the weights are before the start, and how fast they come out (bytes/s)."""

    name: str
    bandwidth_Bps: float
    source: str


_GB = 1e9
TIERS = {t.name: t for t in (
    Tier("nvme_ssd", 7.45 * _GB, "one PCIe 4.0 x4 NVMe SSD, sequential read (Samsung 990 PRO datasheet: 7,450 MB/s)"),
    Tier("network_400g", 50.0 * _GB, "a 400 Gb/s NIC at line rate (400 / 8 = 50 GB/s)"),
    Tier("host_dram", 63.015 * _GB, "host DRAM through the device's PCIe 5.0 x16 host link (32 GT/s x 16 x 128/130 / 8)"),
    Tier("cxl_memory", 63.015 * _GB, "a CXL 2.0 Type-3 memory expander on a PCIe 5.0 x16 link (same physical layer)"),
    Tier("hbm_resident", float("inf"), "already in device memory: nothing to copy"),
)}

#: Each device's host link (what a copy from host or CXL memory crosses), from the datasheets
#: the catalog cites: H100 SXM5 and MI300X PCIe Gen5 x16, A100 SXM4 PCIe Gen4 x16, MTIA v2
#: PCIe Gen5 x8 (Meta's MTIA v2 blog).
HOST_LINKS = {"h100_sxm": "pcie_5", "mi300x": "pcie_5", "a100_sxm": "pcie_4", "mtia_v2": "pcie_5_x8",
              "v100": "pcie_3", "p100": "pcie_3", "k80": "pcie_3"}


def host_link_Bps(device: str) -> float:
    """Peak host-link bandwidth of a catalog device, bytes/s per direction."""
    try:
        name = load_catalog().resolve(device)
    except (KeyError, ValueError) as exc:
        raise ParameterError("device", str(exc)) from None
    return parse_interconnect(HOST_LINKS[name]).per_direction_Bps


def cold_start_s(model_bytes, tier: str, device: str = "h100_sxm", *, init_s: float = DEFAULT_INIT_S,
                 sharers: int = 1) -> float:
    """Seconds from "start this model here" to ready, with its weights in ``tier``.

    Parameters
    ----------
    model_bytes : int
        Bytes of weights to copy (1 to 10^15).
    tier : str
        One of :data:`TIERS`.
    device : str
        A catalog device (its host link bounds every copy that is not already resident).
    init_s : float
        Fixed start-up cost in seconds (0 to 3,600).
    sharers : int
        Devices loading from the same tier at the same time (1 to 100,000); they split its
        bandwidth.
    """
    model_bytes = check_int("model_bytes", model_bytes, 1, MAX_MODEL_BYTES)
    check_choice("tier", tier, tuple(TIERS))
    if init_s != 0:
        init_s = check_positive("init_s", init_s, maximum=3600.0)
    sharers = check_int("sharers", sharers, 1, 100_000)
    bw = TIERS[tier].bandwidth_Bps
    if bw == float("inf"):
        return float(init_s)
    link = min(bw / sharers, host_link_Bps(device))
    return float(init_s) + model_bytes / link
