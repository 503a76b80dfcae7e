"""The LLM catalog: each model's shape, parameter counts and KV-cache size per token.

Read from ``data/models.yaml`` (every figure cites a config.json or a model card).
Mixture-of-experts models split their weights into shared ones (attention, embeddings,
norms, router) and ``experts`` identical expert MLPs of which ``experts_per_token`` run
for each token; :meth:`ModelSpec.expert_params` and :meth:`ModelSpec.shared_params`
give the two parts from the stated totals.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from magnum_lib._resources import data_path
from magnum_lib.base.validate import excerpt

__all__ = ["DTYPE_BYTES", "ModelSpec", "ModelCatalog", "load_models", "default_models", "get_model"]

#: Bytes per element of each weight / KV dtype.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
_INTS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab", "experts",
         "experts_per_token", "params", "active_params")
_FIELDS = _INTS + ("name", "aliases", "tied_embeddings", "dtype", "sources")
_MAX_INT = 10**15  # a quadrillion parameters: far past any model, small enough for float64 sums


@dataclass(frozen=True)
class ModelSpec:
    """One model. Counts are exact integers; ``dtype`` names the weights' and KV cache's type."""

    key: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    experts: int
    experts_per_token: int
    tied_embeddings: bool
    params: int
    active_params: int
    dtype: str
    sources: Mapping[str, str]
    aliases: tuple[str, ...] = ()

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def weight_bytes(self) -> int:
        """All weights, bytes."""
        return self.params * self.dtype_bytes

    @property
    def kv_bytes_per_token_layer(self) -> int:
        """K and V of one token in one layer: ``2 x kv_heads x head_dim x dtype bytes``."""
        return 2 * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token over all layers, bytes."""
        return self.layers * self.kv_bytes_per_token_layer

    @property
    def expert_params(self) -> int:
        """Parameters of one expert MLP summed over layers (0 for a dense model)."""
        if self.experts == 1:
            return 0
        return (self.params - self.active_params) // (self.experts - self.experts_per_token)

    @property
    def shared_params(self) -> int:
        """Parameters every token uses (all of them for a dense model)."""
        return self.params - self.experts * self.expert_params


def _parse_model(key: str, spec, references: Mapping[str, str]) -> ModelSpec:
    where = f"model catalog: models.{key}"
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: expected a mapping of fields, got {type(spec).__name__}")
    missing = [f for f in _FIELDS if f not in spec and f != "aliases"]
    unknown = [f for f in spec if f not in _FIELDS]
    if missing or unknown:
        raise ValueError(f"{where}: missing fields {missing}, unknown fields {unknown}")
    vals = {}
    for f in _INTS:
        v = spec[f]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= _MAX_INT:
            raise ValueError(f"{where}.{f}: expected an integer in [1, {_MAX_INT:.0e}], got {excerpt(v)}")
        vals[f] = v
    if spec["dtype"] not in DTYPE_BYTES:
        raise ValueError(f"{where}.dtype: expected one of {', '.join(DTYPE_BYTES)}, got {excerpt(spec['dtype'])}")
    if vals["heads"] % vals["kv_heads"]:
        raise ValueError(f"{where}: heads ({vals['heads']}) must be a multiple of kv_heads ({vals['kv_heads']})")
    if vals["experts_per_token"] > vals["experts"]:
        raise ValueError(f"{where}: experts_per_token {vals['experts_per_token']} > experts {vals['experts']}")
    dense = vals["experts"] == vals["experts_per_token"]
    if (vals["active_params"] > vals["params"]) or (dense and vals["active_params"] != vals["params"]):
        raise ValueError(f"{where}: active_params must be <= params, and equal to it for a dense model")
    sources = spec["sources"]
    if not isinstance(sources, dict) or set(sources) != {"shape", "params"} \
            or any(s not in references for s in sources.values()):
        raise ValueError(f"{where}.sources: expected {{shape: <ref>, params: <ref>}} naming keys of "
                         f"`references` ({', '.join(references)}), got {excerpt(sources)}")
    if not isinstance(spec["tied_embeddings"], bool):
        raise ValueError(f"{where}.tied_embeddings: expected true or false, got {excerpt(spec['tied_embeddings'])}")
    return ModelSpec(key=key, name=str(spec["name"]), tied_embeddings=spec["tied_embeddings"],
                     dtype=spec["dtype"], sources={k: references[v] for k, v in sources.items()},
                     aliases=tuple(str(a).lower() for a in spec.get("aliases", ())), **vals)


class ModelCatalog(Mapping):
    """Models by key or alias (case-insensitive, ``-`` and ``_`` alike)."""

    def __init__(self, models: Mapping[str, ModelSpec]):
        self._models = dict(models)
        self._names = {}
        for key, m in self._models.items():
            for n in (key, *m.aliases):
                self._names[_norm(n)] = key

    def resolve(self, name) -> str:
        key = self._names.get(_norm(name)) if isinstance(name, str) else None
        if key is None:
            raise KeyError(f"unknown model {excerpt(name)}; known: {', '.join(self._models)}")
        return key

    def __getitem__(self, name) -> ModelSpec:
        return self._models[self.resolve(name)]

    def __iter__(self):
        return iter(self._models)

    def __len__(self) -> int:
        return len(self._models)


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def load_models(path=None) -> ModelCatalog:
    """Read a model catalog (default: the shipped ``data/models.yaml``)."""
    path = Path(path) if path is not None else data_path("models.yaml")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict) \
            or not isinstance(doc.get("references"), dict):
        raise ValueError(f"{path}: expected top-level mappings `references` and `models`")
    return ModelCatalog({str(k).lower(): _parse_model(str(k).lower(), v, doc["references"])
                         for k, v in doc["models"].items()})


@functools.lru_cache(maxsize=1)
def default_models() -> ModelCatalog:
    """The shipped catalog, read once."""
    return load_models()


def get_model(model) -> ModelSpec:
    """A ModelSpec as given, or looked up by name in the shipped catalog."""
    return model if isinstance(model, ModelSpec) else default_models()[model]
