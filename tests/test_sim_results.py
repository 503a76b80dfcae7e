"""results.digest works in blocks of requests: any block size gives the whole-array values."""
import numpy as np
import pytest

from magnum_lib.sim import contract, results
from magnum_lib.sim.config import make_config
from magnum_lib.sim.model import build_region, run_region

# Runs the compiled kernels through the default backend: part of `make test-debug`.
pytestmark = pytest.mark.kernel


def _whole_array(run):
    """The digest's per-request reductions written as whole-array numpy (the definition)."""
    arrays = run.arrays
    started, done = arrays["start"] >= 0, arrays["status"] == contract.ST_DONE
    ran = started & (arrays["node"] >= 0)
    C = len(run.cfg.classes)
    idx = np.flatnonzero(started)
    step = -(-len(idx) // results.BREAKDOWN_SAMPLE) if len(idx) else 1
    return {"dl": (arrays["start"] - arrays["arr"])[started], "e2e": (arrays["finish"] - arrays["arr"])[done],
            "e2e_cls": arrays["cls"][done], "cls_count": np.bincount(arrays["cls"], minlength=C),
            "comp_sum": arrays["comp"][started].sum(axis=0), "comp_n": len(idx),
            "comp_sample": arrays["comp"][idx[::step]],
            "per_node": np.bincount(arrays["node"][ran].astype(np.int64) * C + arrays["cls"][ran],
                                    minlength=len(arrays["node_dev"]) * C),
            "done": int(done.sum()), "dropped": int((arrays["status"] == contract.ST_DROP).sum()),
            "in_flight": int(((arrays["status"] == contract.ST_WAIT) | (arrays["status"] == contract.ST_RUN)).sum()),
            "started": int(started.sum())}


@pytest.fixture(scope="module")
def run():
    cfg = make_config("magnum_v2", cluster="classroom", duration_s=0.3, load=1.2, seed=3)
    return run_region(build_region(cfg))


@pytest.mark.parametrize("block, sample", [(7, 50), (1000, 333), (1 << 18, 100)])
def test_blocked_digest_equals_whole_array_numpy(run, monkeypatch, block, sample):
    monkeypatch.setattr(results, "_BLOCK", block)
    monkeypatch.setattr(results, "BREAKDOWN_SAMPLE", sample)
    d, ref = results.digest(run), _whole_array(run)
    assert ref["started"] > sample and ref["done"] > 0 and ref["started"] < len(run.arrays["start"])
    for k, v in ref.items():
        if k == "per_node":
            continue
        got = d[k]
        assert np.array_equal(got, v) and np.asarray(got).dtype.kind == np.asarray(v).dtype.kind, k
    T, C = len(run.type_keys), len(run.cfg.classes)
    class_type = np.zeros((T, C), dtype=np.int64)
    np.add.at(class_type, run.arrays["node_type"], ref["per_node"].reshape(-1, C))
    assert np.array_equal(d["class_type"], class_type.T)


def test_latencies_widen_to_int64_when_one_does_not_fit_int32(run, monkeypatch):
    monkeypatch.setattr(results, "_BLOCK", 64)
    d32 = results.digest(run)
    monkeypatch.setattr(results, "_I32", int(np.median(d32["dl"])))  # widen part-way through
    d64, ref = results.digest(run), _whole_array(run)
    assert d32["dl"].dtype == np.int32 and d64["dl"].dtype == np.int64 and d64["e2e"].dtype == np.int64
    for k in ("dl", "e2e"):
        assert np.array_equal(d32[k], ref[k]) and np.array_equal(d64[k], ref[k])
    s32, s64 = results.summarize([d32], 1.0), results.summarize([d64], 1.0)
    assert s32 == s64
