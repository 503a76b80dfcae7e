# Sharers split the CXL device's bandwidth: count up while each start beats its own SSD.
own_ssd = cold_start_s(model_bytes, "nvme_ssd", "h100")
ex3_sharers = 1
while cold_start_s(model_bytes, "cxl_memory", "h100", sharers=ex3_sharers + 1) < own_ssd:
    ex3_sharers += 1
