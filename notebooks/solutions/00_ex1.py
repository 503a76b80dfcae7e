# Solution to exercise 1 of 00_welcome: shipping H100 SXM5 cores times the fleet.
ex1_fleet_cores = 200_000 * catalog["h100_sxm"].facts["cuda_cores"]
print(f"{ex1_fleet_cores:,} CUDA cores")
