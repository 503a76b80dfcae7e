# Lower static shares make slowing down pay more; scan the share and keep the one
# whose least-energy clock saves 40%.
shares = np.round(np.arange(0.0, 0.31, 0.01), 2)
savings = [1 - DvfsModel(static_fraction=s).energy_ratio(DvfsModel(static_fraction=s).optimal_clock())
           for s in shares]
ex1_static = float(shares[int(np.argmin(np.abs(np.array(savings) - 0.40)))])
