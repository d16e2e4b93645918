"""Profile layering and the one-clear-message rule for bad configs."""

from pathlib import Path

import pytest

from core.profiles import ConfigError, load_config


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_builtins_present():
    cfg = load_config()
    assert {"spark", "base"} <= set(cfg.profiles)
    assert cfg.profiles["spark"].context_window == 128000
    assert cfg.profiles["spark"].backend == "replay"


def test_layers_override_field_by_field(tmp_path):
    user = tmp_path / "xdg" / "sparkstation" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[profiles.spark]\ntokens_per_s = 2000.0\n[core]\nframe_ms = 8\n')
    (tmp_path / ".spark.toml").write_text('[profiles.spark]\nttft_ms = 50\n'
                                          '[slop]\nanything = "belongs to others"\n')
    cfg = load_config(project_root=tmp_path)
    spark = cfg.profiles["spark"]
    assert spark.tokens_per_s == 2000.0 and spark.ttft_ms == 50 and spark.chip == "cs-3"
    assert cfg.frame_ms == 8
    assert len(cfg.sources) == 3


def _err(tmp_path: Path, text: str, env=None) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(config_file=path, env=env or {})
    return str(exc.value)


def test_unknown_key_names_file_profile_field(tmp_path):
    msg = _err(tmp_path, '[profiles.spark]\ntokens_per_sec = 5\n')
    assert "bad.toml" in msg and "profile 'spark'" in msg and "'tokens_per_sec'" in msg


def test_wrong_type(tmp_path):
    msg = _err(tmp_path, '[profiles.spark]\ncontext_window = "big"\n')
    assert "profile 'spark'" in msg and "'context_window'" in msg and "integer" in msg


def test_missing_env_var_for_key(tmp_path):
    msg = _err(tmp_path, '[profiles.cloud]\nbackend = "openai"\nbase_url = "http://x/v1"\n'
                         'api_model = "m"\napi_key_env = "CEREBRAS_API_KEY"\n')
    assert "profile 'cloud'" in msg and "'api_key_env'" in msg and "CEREBRAS_API_KEY" in msg


def test_env_var_present_is_fine(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text('[profiles.cloud]\nbackend = "openai"\nbase_url = "http://x/v1"\n'
                    'api_model = "m"\napi_key_env = "K"\n')
    cfg = load_config(config_file=path, env={"K": "secret"})
    assert cfg.profiles["cloud"].api_key_env == "K"


def test_new_profile_needs_backend(tmp_path):
    msg = _err(tmp_path, '[profiles.mine]\ntokens_per_s = 5.0\n')
    assert "profile 'mine'" in msg and "'backend'" in msg


def test_bad_toml_and_missing_file(tmp_path):
    assert "not valid TOML" in _err(tmp_path, '[profiles.spark\n')
    with pytest.raises(ConfigError, match="not found"):
        load_config(config_file=tmp_path / "nope.toml")


def test_unknown_core_key(tmp_path):
    assert "[core]" in _err(tmp_path, '[core]\nframes = 3\n')
