# Lower static shares make slowing down pay more: the saving of the least-energy clock falls
# as the static share grows, so there is one share where it is exactly 40%. Solve for it.
from scipy.optimize import brentq


def saving_at(share):
    m = DvfsModel(static_fraction=share)
    return 1 - m.energy_ratio(m.optimal_clock())


ex1_static = round(float(brentq(lambda s: saving_at(s) - 0.40, 0.0, 0.3)), 3)
print(f"static share {ex1_static:.3f}: the least-energy clock saves {saving_at(ex1_static):.1%}")
