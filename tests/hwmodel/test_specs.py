"""Spec data: every entry cites a source and derived parameter counts match the published ones."""

import pytest

from hwmodel import HwModelError
from hwmodel.chips import load_catalog, resolve
from hwmodel.models import get_model, load_models

# (model, published total params in billions, published active params or None)
PUBLISHED = [
    ("llama-3.2-1b", 1.24, None),
    ("llama-3.2-3b", 3.21, None),
    ("llama-3.1-8b", 8.03, None),
    ("llama-3.1-70b", 70.6, None),
    ("llama-3.1-405b", 405.9, None),
    ("qwen2.5-14b", 14.7, None),
    ("qwen2.5-32b", 32.5, None),
    ("qwen3-235b-a22b", 235.0, 22.0),
    ("gpt-oss-120b", 116.8, 5.1),
    ("glm-4.5-air", 106.0, 12.0),
]


@pytest.mark.parametrize("name,total,active", PUBLISHED)
def test_parameter_counts_match_published(name, total, active):
    m = get_model(name)
    assert m.total_params / 1e9 == pytest.approx(total, rel=0.03)
    if active is not None:
        # published "active" figures differ on whether the embeddings count: 10% band
        assert m.active_params / 1e9 == pytest.approx(active, rel=0.10)
        assert m.active_params < 0.25 * m.total_params


def test_every_spec_cites_a_source():
    for m in load_models().values():
        assert m.source, m.name
    cat = load_catalog()
    for c in cat.chips.values():
        assert c.source, c.name
    for s in cat.systems.values():
        assert s.source, s.name


def test_aliases_and_systems_resolve():
    assert get_model("llama-3.3-70b").name == "llama-3.1-70b"
    chip, count = resolve("8x-h100")
    assert chip.name == "h100-sxm" and count == 8
    chip, count = resolve("H100")
    assert chip.name == "h100-sxm" and count is None


def test_unknown_names_raise_valueerror():
    with pytest.raises(HwModelError, match="unknown model"):
        get_model("gpt-7")
    with pytest.raises(ValueError, match="unknown chip"):
        resolve("tpu-v9")


def test_moe_expected_experts_grow_with_tokens():
    m = get_model("qwen3-235b-a22b")
    one, many = m.layer_params_touched(1), m.layer_params_touched(512)
    assert one < many <= m.layer_params_total * 1.0001
    # 512 tokens routed 8-of-128 touch essentially every expert
    assert many == pytest.approx(m.layer_params_total - 0, rel=0.01)


def test_sliding_window_caps_attended_context():
    m = get_model("gpt-oss-120b")
    assert m.attended_ctx(100_000) == pytest.approx(0.5 * 128 + 0.5 * 100_000)
    assert get_model("llama-3.1-8b").attended_ctx(5000) == 5000


def test_bad_toml_keys_are_rejected(tmp_path):
    from hwmodel.models import load_models as lm

    bad = tmp_path / "m.toml"
    bad.write_text('[models.x]\nhidden=1\nlayers=1\nheads=1\nkv_heads=1\nhead_dim=1\nffn=1\nvocab=1\nwidth=3\n')
    with pytest.raises(HwModelError, match="unknown keys"):
        lm(str(bad))


def test_hub_style_names_resolve_to_our_shapes():
    from hwmodel.chips import resolve
    from hwmodel.models import get_model

    assert get_model("meta-llama/Llama-3.1-8B-Instruct").name == "llama-3.1-8b"
    assert get_model("Qwen/Qwen2.5-14B-Instruct").name == "qwen2.5-14b"
    assert resolve("NVIDIA H100")[0].name == "h100-sxm" and resolve("h100_sxm")[0].name == "h100-sxm"
    with pytest.raises(HwModelError, match="unknown model"):
        get_model("meta-llama/Llama-9-1T")
