"""Cold starts over the storage hierarchy (magnum_lib.storage, claim C48)."""
import pytest

from magnum_lib.base.validate import ParameterError
from magnum_lib.hardware import load_catalog
from magnum_lib.storage import DEFAULT_INIT_S, HOST_LINKS, TIERS, cold_start_s, host_link_Bps
from magnum_lib.units import parse_interconnect

LLAMA70_FP8 = 70 * 10**9  # 70 billion parameters at one byte each


def test_every_catalog_device_has_a_host_link():
    assert set(load_catalog()) <= set(HOST_LINKS)


def test_cold_start_is_init_plus_bytes_over_the_slowest_link():
    nvme = TIERS["nvme_ssd"].bandwidth_Bps
    assert cold_start_s(LLAMA70_FP8, "nvme_ssd") == pytest.approx(DEFAULT_INIT_S + LLAMA70_FP8 / nvme)
    # CXL memory is faster than the SSD but still bounded by the host link ...
    link = parse_interconnect("pcie_5").per_direction_Bps
    assert cold_start_s(LLAMA70_FP8, "cxl_memory") == pytest.approx(DEFAULT_INIT_S + LLAMA70_FP8 / link)
    # ... and by MTIA v2's narrower x8 link.
    assert host_link_Bps("mtia_v2") == pytest.approx(link / 2)
    assert cold_start_s(LLAMA70_FP8, "cxl_memory", "mtia") > cold_start_s(LLAMA70_FP8, "cxl_memory", "h100")


def test_c48_cxl_shortens_but_does_not_eliminate_a_cold_start():
    cxl = cold_start_s(LLAMA70_FP8, "cxl_memory", init_s=0)
    assert cxl > 1.0  # seconds, not zero
    assert cold_start_s(LLAMA70_FP8, "nvme_ssd", init_s=0) / cxl > 5
    assert cold_start_s(LLAMA70_FP8, "hbm_resident", init_s=0) == 0.0


def test_sharers_split_the_tier_bandwidth():
    one = cold_start_s(LLAMA70_FP8, "nvme_ssd", init_s=0)
    assert cold_start_s(LLAMA70_FP8, "nvme_ssd", init_s=0, sharers=4) == pytest.approx(4 * one)


@pytest.mark.parametrize("kwargs", [dict(model_bytes=0), dict(model_bytes=10**16), dict(model_bytes=1.5),
                                    dict(tier="tape"), dict(device="tpu"), dict(init_s=-1),
                                    dict(init_s=float("nan")), dict(sharers=0)])
def test_bad_input_is_refused(kwargs):
    args = dict(model_bytes=LLAMA70_FP8, tier="nvme_ssd", device="h100")
    args.update(kwargs)
    with pytest.raises(ParameterError):
        cold_start_s(args.pop("model_bytes"), args.pop("tier"), args.pop("device"), **args)
