# Solution to exercise 1 of 00_welcome: the article's 600,000 GPUs (C23) times the shipping H100 SXM5's cores.
ex1_fleet_cores = 600_000 * catalog["h100_sxm"].facts["cuda_cores"]
print(f"{ex1_fleet_cores:,} CUDA cores")
