# Solution to exercise 2 of 00_welcome: ridge point = peak FLOP/s / bandwidth (bytes/s), at FP8.
mi300x = catalog["mi300x"]
ex2_ridge = mi300x.peak("fp8") / mi300x.mem_bandwidth_Bps
print(f"FP8 ridge point: {ex2_ridge:.0f} FLOP/byte")
