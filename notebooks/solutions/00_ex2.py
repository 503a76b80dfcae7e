# Solution to exercise 2 of 00_welcome: ridge point = peak FLOP/s / bandwidth (bytes/s).
mi300x = catalog["mi300x"]
ex2_ridge = mi300x.peak("bf16") / mi300x.mem_bandwidth_Bps
print(f"ridge point: {ex2_ridge:.0f} FLOP/byte")
