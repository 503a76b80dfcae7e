# Solution to exercise 3 of 00_welcome: the lowest energy (TDP x roofline time) in BF16.
energy = {key: hardware.request_cost(acc, 10e12, 1e9, "bf16").energy_j
          for key, acc in catalog.items() if "bf16" in acc.peak_flops}
ex3_device = min(energy, key=energy.get)
print(ex3_device, f"{energy[ex3_device]:.2f} J")
