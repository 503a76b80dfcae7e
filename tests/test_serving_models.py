"""The model catalog: every shipped figure agrees with the model's own shape, and bad catalogs are refused."""
import pytest
import yaml

from magnum_lib.serving.models import default_models, get_model, load_models


def dense_params(m):
    """Parameters a Llama/Mixtral-shaped model has, from its config.json shape alone."""
    h, kvd = m.hidden, m.kv_heads * m.head_dim
    attn = h * m.heads * m.head_dim * 2 + 2 * h * kvd           # q, o; k, v
    mlp = 3 * h * m.intermediate                                 # gate, up, down (one expert)
    router = h * m.experts if m.experts > 1 else 0
    per_layer_total = attn + m.experts * mlp + router + 2 * h   # two RMSNorms
    per_layer_active = attn + m.experts_per_token * mlp + router + 2 * h
    emb = m.vocab * h * (1 if m.tied_embeddings else 2) + h     # embeddings, lm_head, final norm
    return m.layers * per_layer_total + emb, m.layers * per_layer_active + emb


@pytest.mark.parametrize("key", ["llama3_8b", "llama3_70b", "mixtral_8x7b"])
def test_stated_parameter_counts_are_the_shapes(key):
    m = default_models()[key]
    assert dense_params(m) == (m.params, m.active_params)
    assert set(m.sources) == {"shape", "params"} and all("https://" in s for s in m.sources.values())


def test_published_rounded_figures():
    cat = default_models()
    assert round(cat["llama3_8b"].params / 1e9) == 8 and round(cat["llama3_70b"].params / 1e9) == 71
    mix = cat["mixtral"]
    assert round(mix.params / 1e8) == 467 and round(mix.active_params / 1e8) == 129  # "46.7B", "12.9B"


def test_kv_bytes_per_token():
    # GQA with 8 KV heads of 128 dims, bf16: 2 x 8 x 128 x 2 = 4 KiB per layer
    assert get_model("llama3-70b").kv_bytes_per_token == 80 * 4096
    assert get_model("llama3_8b").kv_bytes_per_token_layer == 4096


def test_moe_split():
    m = get_model("mixtral")
    assert m.shared_params + m.experts * m.expert_params == m.params
    assert m.shared_params + m.experts_per_token * m.expert_params == m.active_params
    assert get_model("llama3_8b").expert_params == 0


def test_unknown_model_names_the_known():
    with pytest.raises(KeyError, match="unknown model 'gpt-5'.*llama3_8b"):
        get_model("gpt-5")


def _write(tmp_path, mutate):
    from magnum_lib._resources import data_path
    doc = yaml.safe_load(data_path("models.yaml").read_text())
    mutate(doc)
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


@pytest.mark.parametrize("mutate, msg", [
    (lambda d: d["models"]["llama3_8b"].update(layers=0), r"models.llama3_8b.layers: expected an integer"),
    (lambda d: d["models"]["llama3_8b"].update(layers=True), r"layers: expected an integer"),
    (lambda d: d["models"]["llama3_8b"].update(dtype="fp4"), r"dtype: expected one of"),
    (lambda d: d["models"]["llama3_8b"].update(kv_heads=7), r"multiple of kv_heads"),
    (lambda d: d["models"]["llama3_8b"].update(active_params=1), r"equal to it for a dense model"),
    (lambda d: d["models"]["llama3_8b"]["sources"].update(params="nowhere"), r"sources: expected"),
    (lambda d: d["models"]["llama3_8b"].pop("hidden"), r"missing fields \['hidden'\]"),
    (lambda d: d.pop("references"), r"expected top-level mappings"),
])
def test_bad_catalog_is_one_clear_error(tmp_path, mutate, msg):
    with pytest.raises(ValueError, match=msg):
        load_models(_write(tmp_path, mutate))
