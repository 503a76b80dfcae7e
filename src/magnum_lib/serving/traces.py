"""Loaders for the public LLM inference traces (formats: shared/data/README.md).

Files are found as every trace loader finds them (:func:`magnum_lib.workload.traces.trace_path`).
They are untrusted input: a malformed file raises one ``ValueError`` naming the file,
the line and the field.

* Azure LLM inference 2023 (Splitwise, ISCA 2024): ``azure-code`` (8,819 requests) and
  ``azure-conv`` (19,366): ``TIMESTAMP,ContextTokens,GeneratedTokens``; no prefix hashes.
* Mooncake FAST'25 (Kimi): ``mooncake-conv`` (12,031) and ``mooncake-synth`` (3,993):
  JSON lines with ``timestamp`` (ms), ``input_length``, ``output_length``, ``hash_ids``
  (one per 512-token block of the prompt, ``ceil(input_length / 512)`` of them).
"""
from __future__ import annotations

import json

import numpy as np

from magnum_lib.base.validate import check_choice, excerpt
from magnum_lib.serving.requests import MAX_TOKENS, ServingRequests
from magnum_lib.workload._csvcols import read_columns
from magnum_lib.workload.traces import read_regular_file, trace_path

__all__ = ["TRACES", "load_azure_llm", "load_mooncake", "load_trace"]

_AZURE = {"code": "azure_llm/AzureLLMInferenceTrace_code.csv", "conv": "azure_llm/AzureLLMInferenceTrace_conv.csv"}
_MOONCAKE = {"conversation": "mooncake/conversation_trace.jsonl", "synthetic": "mooncake/synthetic_trace.jsonl"}
_MAX_JSONL_BYTES = 512 * 2**20  # the public files are 1-3 MB
_MAX_MS = 10**12                # about 30 years of milliseconds
MOONCAKE_BLOCK = 512


def load_azure_llm(kind: str = "conv", path=None, rate_scale: float = 1.0) -> ServingRequests:
    """Azure's 2023 LLM inference trace (``kind`` "code" or "conv"), arrivals from ``TIMESTAMP``
    (relative to the first, sorted stably), ``rate_scale`` times as fast."""
    check_choice("kind", kind, tuple(_AZURE))
    p = trace_path(_AZURE[kind], path)
    c = read_columns(p, ["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
    if len(c) == 0:
        raise ValueError(f"{p}: no request rows after the header")
    raw = c.raw("TIMESTAMP")
    try:
        ts = np.array(raw, dtype="datetime64[ns]")
    except ValueError:
        ts = None
    ok = np.zeros(len(raw), bool) if ts is None else ~np.isnat(ts)
    if ts is None:  # find the first bad row for the message
        for i, v in enumerate(raw):
            try:
                ok[i] = not np.isnat(np.datetime64(v, "ns"))
            except ValueError:
                break
    c.check("TIMESTAMP", ok, "expected a timestamp 'YYYY-MM-DD HH:MM:SS.fffffff'")
    prompt = c.ints("ContextTokens", minimum=1, maximum=MAX_TOKENS)
    output = c.ints("GeneratedTokens", minimum=1, maximum=MAX_TOKENS)
    order = np.argsort(ts, kind="stable")
    arrival = (ts[order] - ts[order][0]).astype(np.int64)
    reqs = ServingRequests(arrival, prompt[order], output[order], name=f"azure-{kind}")
    return reqs if rate_scale == 1.0 else reqs.scaled(rate_scale)


def _read_lines(p) -> list[bytes]:
    return read_regular_file(p, _MAX_JSONL_BYTES).splitlines()


def _int_field(p, line, obj, key, lo, hi) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{p}: line {line}: {key!r}: expected an integer in [{lo}, {hi:,}], got {excerpt(v)}")
    return v


def load_mooncake(kind: str = "conversation", path=None, rate_scale: float = 1.0) -> ServingRequests:
    """Mooncake's FAST'25 trace (``kind`` "conversation" or "synthetic"), with prefix hashes."""
    check_choice("kind", kind, tuple(_MOONCAKE))
    p = trace_path(_MOONCAKE[kind], path)
    arrival, prompt, output, ptr, ids = [], [], [], [0], []
    for line, raw in enumerate(_read_lines(p), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ValueError(f"{p}: line {line}: not UTF-8 text") from None
        except (json.JSONDecodeError, RecursionError) as e:
            raise ValueError(f"{p}: line {line}: invalid JSON ({excerpt(str(e))})") from None
        if not isinstance(obj, dict) or set(obj) != {"timestamp", "input_length", "output_length", "hash_ids"}:
            raise ValueError(f"{p}: line {line}: expected an object with exactly timestamp, input_length, "
                             f"output_length, hash_ids; got {excerpt(obj)}")
        arrival.append(_int_field(p, line, obj, "timestamp", 0, _MAX_MS) * 1_000_000)
        n_in = _int_field(p, line, obj, "input_length", 1, MAX_TOKENS)
        prompt.append(n_in)
        output.append(_int_field(p, line, obj, "output_length", 1, MAX_TOKENS))
        h = obj["hash_ids"]
        want = -(-n_in // MOONCAKE_BLOCK)
        if not isinstance(h, list) or len(h) != want or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**62 for x in h):
            raise ValueError(f"{p}: line {line}: 'hash_ids': expected {want} integers >= 0 (one per "
                             f"{MOONCAKE_BLOCK}-token block of input_length {n_in}), got {excerpt(h)}")
        ids.extend(h)
        ptr.append(len(ids))
    if not arrival:
        raise ValueError(f"{p}: no request lines")
    arr = np.array(arrival, np.int64)
    if np.any(np.diff(arr) < 0):  # the published files are sorted; keep CSR simple by demanding it
        bad = int(np.argmax(np.diff(arr) < 0)) + 2
        raise ValueError(f"{p}: request {bad}: timestamp goes backwards (expected non-decreasing)")
    reqs = ServingRequests(arr - arr[0], np.array(prompt, np.int64), np.array(output, np.int64),
                           np.array(ptr, np.int64), np.array(ids, np.int64), MOONCAKE_BLOCK, f"mooncake-{kind}")
    return reqs if rate_scale == 1.0 else reqs.scaled(rate_scale)


#: Trace names (the CLI's ``--trace`` choices) -> loader(path=None, rate_scale=1.0).
TRACES = {
    "azure-code": lambda **kw: load_azure_llm("code", **kw),
    "azure-conv": lambda **kw: load_azure_llm("conv", **kw),
    "mooncake-conv": lambda **kw: load_mooncake("conversation", **kw),
    "mooncake-synth": lambda **kw: load_mooncake("synthetic", **kw),
}


def load_trace(name: str, path=None, rate_scale: float = 1.0) -> ServingRequests:
    """A trace by name (:data:`TRACES`)."""
    check_choice("trace", name, tuple(TRACES))
    return TRACES[name](path=path, rate_scale=rate_scale)
