"""A small, fixed region for ``faux-magnum lease`` and notebooks: ten 8-device nodes.

=======  ==========  =======  ===========  ================  ==========
node_id  name        type     devices      memory / device   link
=======  ==========  =======  ===========  ================  ==========
0-3      h100-00..03 h100_sxm 8            80 GB             nvlink_4
4-5      a100-04..05 a100_sxm 8            80 GB             nvlink_3
6-7      mi300x-06.. mi300x   8            192 GB            infinity_fabric
8-9      mtia-08..09 mtia_v2  8            128 GB            pcie_5_x8
=======  ==========  =======  ===========  ================  ==========

Figures come from the hardware catalog (``data/hardware.yaml``), so the region always
agrees with it. "GB" is 10**9 bytes.

Interconnect rule: a lease's interconnect is a *minimum class*. A node satisfies it when
its link is of the same family (``nvlink``, ``pcie``, ``infinity_fabric``, ``ethernet``,
``infiniband``) and at least as fast per direction. So the article's
``--gpu-type=h100 --interconnect=nvlink_3`` lands on an H100 node (NVLink 4 is faster
than NVLink 3), while ``--interconnect=pcie_5`` never matches an NVLink node: a job that
asks for PCIe topology is not silently given another fabric.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from magnum_lib.base.validate import ParameterError, check_int
from magnum_lib.cluster import Cluster
from magnum_lib.hardware import Catalog, default_catalog
from magnum_lib.units import parse_interconnect

__all__ = ["NodeSpec", "DEFAULT_LAYOUT", "default_region", "region_from_cluster",
           "interconnect_satisfies", "DEFAULT_REGION_NAME"]

DEFAULT_REGION_NAME = "default"
# (name prefix, catalog key, number of nodes); devices per node are 8 for all.
DEFAULT_LAYOUT = (("h100", "h100_sxm", 4), ("a100", "a100_sxm", 2),
                  ("mi300x", "mi300x", 2), ("mtia", "mtia_v2", 2))
_DEVICES_PER_NODE = 8


@dataclass(frozen=True)
class NodeSpec:
    """One node of a region: homogeneous devices behind one interconnect.

    Attributes
    ----------
    node_id : int
        Index of the node in its region (what a :class:`~magnum_lib.regional.lease.Lease` names).
    name : str
        Readable name, e.g. ``"h100-00"``.
    device_type : str
        Catalog key, e.g. ``"h100_sxm"``.
    devices : int
        Devices in the node (>= 1).
    memory_per_device_bytes : int
        Memory of each device, bytes.
    interconnect : str
        Link class between the node's devices, e.g. ``"nvlink_4"``.
    """

    node_id: int
    name: str
    device_type: str
    devices: int
    memory_per_device_bytes: int
    interconnect: str

    def __post_init__(self):
        check_int("node_id", self.node_id, 0)
        check_int("devices", self.devices, 1)
        check_int("memory_per_device_bytes", self.memory_per_device_bytes, 1)
        for name in ("name", "device_type", "interconnect"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ParameterError(name, f"must be a non-empty string, got {value!r}")
        if parse_interconnect(self.interconnect).name != self.interconnect:
            raise ParameterError("interconnect", f"must be a canonical class name, got {self.interconnect!r}")

    def to_dict(self) -> dict:
        """Plain JSON-able dict."""
        return asdict(self)


def _family(name: str) -> str:
    # "nvlink_4" -> "nvlink", "pcie_5_x8" -> "pcie", "ethernet_100g" -> "ethernet".
    return "infinity_fabric" if name == "infinity_fabric" else name.split("_")[0]


def interconnect_satisfies(offered, required) -> bool:
    """True when link class ``offered`` meets the minimum ``required`` (names or Interconnects).

    Same family and ``offered.per_direction_Bps >= required.per_direction_Bps``: the rule
    of the node-side validator (:mod:`magnum_lib.regional.validator`), which has the last word.
    """
    have, want = parse_interconnect(offered), parse_interconnect(required)
    return _family(have.name) == _family(want.name) and have.per_direction_Bps >= want.per_direction_Bps


def default_region(catalog: Catalog | None = None) -> tuple[NodeSpec, ...]:
    """The ten nodes of the built-in region (see the module docstring), in node_id order."""
    catalog = catalog or default_catalog()
    nodes = []
    for prefix, key, n in DEFAULT_LAYOUT:
        acc = catalog[key]
        for _ in range(n):
            i = len(nodes)
            nodes.append(NodeSpec(i, f"{prefix}-{i:02d}", acc.key, _DEVICES_PER_NODE, acc.memory_bytes,
                                  acc.interconnect.name))
    return tuple(nodes)


def region_from_cluster(cluster: Cluster, region: int = 0, catalog: Catalog | None = None) -> tuple[NodeSpec, ...]:
    """The nodes of one region of a :func:`magnum_lib.cluster.build_cluster` topology.

    Node ids are renumbered 0.. within the region; names keep the cluster's node index
    (``"n000123"``). Each node's link is its device type's catalog interconnect.
    """
    catalog = catalog or default_catalog()
    region = check_int("region", region, 0, cluster.n_regions - 1)
    nodes = []
    for i, n in enumerate(cluster.nodes_of_region(region)):
        acc = catalog[cluster.type_keys[int(cluster.node_type[n])]]
        devices = int(cluster.node_device_offset[n + 1] - cluster.node_device_offset[n])
        nodes.append(NodeSpec(i, f"n{int(n):06d}", acc.key, devices, acc.memory_bytes, acc.interconnect.name))
    return tuple(nodes)
