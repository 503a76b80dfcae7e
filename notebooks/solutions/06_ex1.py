# Solution to exercise 1 of 06_heterogeneous_hell: stream the same bytes at the rate the link carries.
import math

from magnum_lib.units import parse_bandwidth, parse_duration

ex1_manifest = yaml.safe_load(MANIFESTS.joinpath("article.yaml").read_text(encoding="utf-8"))
link_Bps = catalog["mtia_v2"].interconnect.per_direction_Bps       # PCIe 5 x8: about 31.5 GB/s each way
for layer in ex1_manifest["job"]["graph"]:
    streamed = parse_duration(layer["runtime"]) / 1e9 * parse_bandwidth(layer["interconnect"])   # bytes
    rate = math.floor(link_Bps / 1e6) * 1e6                         # at most what the link carries
    layer["runtime"] = f"{math.ceil(streamed / rate * 1e9)}ns"     # so the layer takes longer
    layer["interconnect"] = f"{rate / 1e6:.0f}MB/s"
print(yaml.safe_dump(ex1_manifest, sort_keys=False), reserve(parse_manifest(ex1_manifest)).notes or "(no notes)")
