# Checkpoint time = memory in use per device / bandwidth (each GPU writes its own drive).
nvme_Bps = parse_interconnect("pcie_4_x4").per_direction_Bps
ex2_seconds = cm.checkpoint_seconds("80GB", nvme_Bps)
print(f"80 GB at {format_bandwidth(nvme_Bps)}: {ex2_seconds:.2f} s")
