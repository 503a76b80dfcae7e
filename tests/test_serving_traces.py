"""Loaders of the Azure and Mooncake inference traces: published statistics, and untrusted files."""
import numpy as np
import pytest

from magnum_lib.serving import load_azure_llm, load_mooncake, load_trace, make_replica, simulate, summarize


@pytest.mark.needs_traces
def test_azure_counts_and_splitwise_medians():
    # Splitwise (Patel et al., ISCA 2024) characterizes these traces: median prompt about 1500
    # (coding) / 1020 (conversation) tokens, median output 13 / 129 tokens; counts from the README
    code, conv = load_azure_llm("code"), load_azure_llm("conv")
    assert (len(code), len(conv)) == (8819, 19366)
    assert np.median(code.prompt) == pytest.approx(1500, rel=0.03) and np.median(code.output) == 13
    assert np.median(conv.prompt) == 1020 and np.median(conv.output) == 129
    assert 3500 < conv.duration_s < 3700 and conv.arrival_ns[0] == 0 and np.all(np.diff(conv.arrival_ns) >= 0)


@pytest.mark.needs_traces
def test_mooncake_counts_means_and_blocks():
    # Mooncake (Qin et al., FAST 2025), its table of the released traces: average input 12035 /
    # output 343 tokens for the conversation trace, 15325 / 149 for the synthetic one
    conv, syn = load_mooncake("conversation"), load_mooncake("synthetic")
    assert len(conv) == 12031 and round(conv.prompt.mean()) == 12035 and round(conv.output.mean()) == 343
    assert len(syn) == 3993 and round(syn.prompt.mean()) == 15325 and round(syn.output.mean()) == 149
    assert conv.hash_block == 512 and np.array_equal(np.diff(conv.hash_ptr), -(-conv.prompt // 512))


@pytest.mark.needs_traces
def test_mooncake_conversation_reuse_with_an_unbounded_cache():
    # The same table gives a 40% cache ratio for the conversation trace. An unbounded cache over
    # the whole trace reuses 37% of prompt tokens here: we count full 512-token blocks only and
    # always compute a prompt's last token, so a little less than the paper's block-level figure.
    conv = load_mooncake("conversation")
    seen, hit = set(), 0
    for i in range(len(conv)):
        p, h = int(conv.prompt[i]), conv.hashes(i)
        j = 0
        while j < (p - 1) // 512 and int(h[j]) in seen:
            j += 1
        hit += 512 * j
        seen.update(int(x) for x in h[:p // 512])
    assert 0.35 < hit / conv.prompt.sum() < 0.40


@pytest.mark.needs_traces
def test_rate_scale_compresses_arrivals():
    a, b = load_trace("azure-code"), load_trace("azure-code", rate_scale=2.0)
    assert b.duration_s == pytest.approx(a.duration_s / 2, rel=1e-6)
    assert np.array_equal(a.prompt, b.prompt)


@pytest.mark.needs_traces
def test_prefix_aware_routing_raises_the_hit_rate_on_mooncake_conversations():
    reqs = load_mooncake("conversation").head(800)
    spec = make_replica("llama3_8b", "h100", 1)
    rr = summarize(simulate(reqs, spec, replicas=4, batching="chunked", router="round-robin"))
    pa = summarize(simulate(reqs, spec, replicas=4, batching="chunked", router="prefix-aware"))
    assert pa["prefix_hit_rate"] > rr["prefix_hit_rate"] * 1.2


def _azure(tmp_path, body):
    p = tmp_path / "a.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + body)
    return p


@pytest.mark.parametrize("body, msg", [
    ("2023-11-16 18:15:46.6805900,374,0\n", r"line 2, column 3 \('GeneratedTokens'\): expected an integer >= 1"),
    ("2023-11-16 18:15:46.6805900,x,4\n", r"line 2, column 2 \('ContextTokens'\): expected an integer"),
    ("yesterday,3,4\n", r"line 2, column 1 \('TIMESTAMP'\): expected a timestamp"),
    ("2023-11-16 18:15:46,3\n", "line 2: expected 3 fields"),
    ("", "no request rows"),
])
def test_bad_azure_file(tmp_path, body, msg):
    with pytest.raises(ValueError, match=msg):
        load_azure_llm("conv", path=_azure(tmp_path, body))


def test_good_small_azure_file_sorts_arrivals(tmp_path):
    r = load_azure_llm("code", path=_azure(tmp_path, "2023-11-16 18:15:47.0,5,6\n2023-11-16 18:15:46.5,3,4\n"))
    assert list(r.arrival_ns) == [0, 500_000_000] and list(r.prompt) == [3, 5]


@pytest.mark.parametrize("line, msg", [
    ('{"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [1]}', "expected 2 integers"),
    ('{"timestamp": -1, "input_length": 6, "output_length": 3, "hash_ids": [1]}', "'timestamp': expected an integer"),
    ('{"timestamp": 0, "input_length": 6, "output_length": 0, "hash_ids": [1]}', "'output_length'"),
    ('{"timestamp": 0, "input_length": 6, "output_length": 3, "hash_ids": [true]}', "'hash_ids'"),
    ('{"timestamp": 0, "input_length": 6}', "expected an object with exactly"),
    ('{"timestamp": 0, ', "line 1: invalid JSON"),
    ('[1, 2]', "expected an object"),
])
def test_bad_mooncake_file(tmp_path, line, msg):
    p = tmp_path / "m.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(ValueError, match=msg):
        load_mooncake(path=p)


def test_mooncake_backwards_time_and_not_a_file(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"timestamp": 5, "input_length": 6, "output_length": 3, "hash_ids": [1]}\n'
                 '{"timestamp": 4, "input_length": 6, "output_length": 3, "hash_ids": [2]}\n')
    with pytest.raises(ValueError, match="request 2: timestamp goes backwards"):
        load_mooncake(path=p)
    with pytest.raises(FileNotFoundError, match="trace file not found"):
        load_mooncake(path=tmp_path)


def test_unknown_trace_name():
    with pytest.raises(ValueError, match="trace must be one of 'azure-code'"):
        load_trace("sharegpt")
