"""sim.pages.small_pages turns numpy's huge-page advice off inside and restores it after."""
import numpy as np
import pytest

from magnum_lib.sim import pages


@pytest.mark.skipif(pages._set_madvise_hugepage is None, reason="numpy without the hugepage switch")
@pytest.mark.parametrize("before", [True, False])
def test_small_pages_restores_numpy_setting_even_on_error(before):
    set_ = pages._set_madvise_hugepage
    orig = set_(before)
    try:
        with pytest.raises(RuntimeError):
            with pages.small_pages():
                assert set_(False) is False  # off inside (set_ returns the previous value)
                raise RuntimeError
        assert set_(before) is before
    finally:
        set_(orig)


def test_decorated_function_keeps_its_values_and_name():
    @pages.on_small_pages
    def f(n, fill=-1):
        """Doc."""
        return np.full(n, fill)
    assert f.__name__ == "f" and f.__doc__ == "Doc." and np.array_equal(f(3, fill=2), [2, 2, 2])
