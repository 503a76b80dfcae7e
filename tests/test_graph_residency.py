"""graph.residency: first-fit admission of static graphs, tenants per device, where one more graph fits."""
import numpy as np
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.graph.packing import make_inference_graphs
from magnum_lib.graph.residency import POOL_GRAPHS, first_fit_admit, graph_fits, tenant_reservations
from magnum_lib.hardware import default_catalog


def test_first_fit_skips_what_does_not_fit_and_keeps_trying():
    res = np.array([[6, 5, 3, 1],   # 6, then 5 does not fit (11 > 10), 3 fits (9), 1 fits (10)
                    [11, 2, 2, 2],  # 11 never fits: 2 + 2 + 2
                    [0, 0, 0, 0]])
    assert first_fit_admit(res, 10).tolist() == [10, 6, 0]


def test_tenants_are_the_pool_graphs_admitted_first_fit():
    cap = default_catalog()["mtia_v2"].memory_bytes
    held = tenant_reservations(200, 9, "mtia_v2", 0.1, seed=3)
    pool = make_inference_graphs(POOL_GRAPHS, seed=3, device="mtia_v2", memory_pressure=0.1)
    picks = np.random.default_rng([3, 1]).integers(POOL_GRAPHS, size=(200, 9))
    assert np.array_equal(held, first_fit_admit(pool.reserve_bytes[picks], cap))
    assert (held <= cap).all() and (held > 0).all()
    assert np.array_equal(tenant_reservations(5, 0), np.zeros(5, np.int64))


def test_graph_fits_and_bytes_left():
    fits, left = graph_fits(4, np.array([0, 6, 7, 10]), 10)
    assert fits.tolist() == [True, True, False, False]
    assert left.tolist() == [6, 0, 3, 0]


@pytest.mark.parametrize("call", [
    lambda: first_fit_admit(np.array([1, 2]), 10),
    lambda: first_fit_admit(np.array([[-1]]), 10),
    lambda: graph_fits(1, np.array([11]), 10),
    lambda: graph_fits(-1, np.array([1]), 10),
    lambda: tenant_reservations(-1, 2),
    lambda: tenant_reservations(3, 2000),
])
def test_bad_inputs_name_the_parameter(call):
    with pytest.raises(ParameterError):
        call()
