"""Profile layering and the one-clear-message rule for bad configs."""

from pathlib import Path

import pytest

from core.profiles import ConfigError, load_config


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_no_model_is_built_in_outside_the_demo(tmp_path):
    """A user's project gets no recorded answers: no profile until the user configures one."""
    assert load_config(project_root=tmp_path, env={}).profiles == {}


def test_demo_profiles_only_in_a_demo_folder(tmp_path):
    (tmp_path / ".spark").mkdir()
    (tmp_path / ".spark" / "demo").write_text("demo\n")
    cfg = load_config(project_root=tmp_path)
    assert {"spark", "base"} <= set(cfg.profiles)
    assert cfg.profiles["spark"].context_window == 128000
    assert cfg.profiles["spark"].backend == "replay"
    assert cfg.profiles["spark"].cassettes  # the recordings are named, never implied


def test_layers_override_field_by_field(tmp_path, monkeypatch):
    user = tmp_path / "xdg" / "sparkstation" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[profiles.mine]\nbackend = "replay"\ntokens_per_s = 5.0\n'
                    '[profiles.spark]\ntokens_per_s = 2000.0\n[core]\nframe_ms = 8\n')
    (tmp_path / ".spark.toml").write_text('[profiles.spark]\nttft_ms = 50\n'
                                          '[profiles.mine]\nttft_ms = 7\n'
                                          '[slop]\nanything = "belongs to others"\n')
    monkeypatch.setenv("SPARK_DEMO_PROFILES", "1")
    cfg = load_config(project_root=tmp_path)
    spark = cfg.profiles["spark"]
    # in the demo its 'spark' replaces the user's whole; the project still overrides it
    assert spark.tokens_per_s == 1000.0 and spark.ttft_ms == 50 and spark.chip == "cs-3"
    assert cfg.profiles["mine"].tokens_per_s == 5.0 and cfg.profiles["mine"].ttft_ms == 7
    assert cfg.frame_ms == 8
    assert len(cfg.sources) == 4  # built-in, user, demo, project


def test_the_demo_replays_even_for_a_user_with_a_real_spark(tmp_path, monkeypatch):
    user = tmp_path / "xdg" / "sparkstation" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[profiles.spark]\nbackend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
                    'api_model = "m"\n')
    assert load_config(project_root=tmp_path, env={}).profiles["spark"].backend == "openai"
    (tmp_path / ".spark").mkdir()
    (tmp_path / ".spark" / "demo").write_text("demo\n")
    spark = load_config(project_root=tmp_path, env={}).profiles["spark"]
    assert spark.backend == "replay" and spark.base_url is None


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


@pytest.mark.parametrize("text, words", [
    ('[profiles.spark]\ntokens_per_sec = 5\n', ["profile 'spark'", "'tokens_per_sec'",
                                                 "did you mean 'tokens_per_s'"]),
    ('[profiles.spark]\ntokens_per_s = nan\n', ["profile 'spark'", "'tokens_per_s'", "finite"]),
    ('[profiles.spark]\nttft_ms = inf\n', ["'ttft_ms'", "finite"]),
    ('[profiles.spark]\ncontext_window = true\n', ["'context_window'", "integer"]),
    ('[profiles.spark]\ncassettes = "folder"\n', ["'cassettes'", "list"]),
    ('[profiles.spark]\nbackend = "vllm"\n', ["'backend'", "replay, openai"]),
    ('[profiles.x]\nbackend = "openai"\nbase_url = "localhost:8000/v1"\napi_model = "m"\n',
     ["profile 'x'", "'base_url'", "http://"]),
    ('[profiles.x]\nbackend = "openai"\napi_model = "m"\n', ["profile 'x'", "'base_url'"]),
    ('[profiles.x]\nbackend = "openai"\nbase_url = "http://h/v1"\n', ["'api_model'"]),
    ('[profiles.spark]\nbackend = "replay"\ntokens_per_s = 9.0\nmax_retries = 1000\n',
     ["'max_retries'", "at most 10"]),
    ('[profile.spark]\nbackend = "replay"\n', ["[profile]", "did you mean [profiles]"]),
    ('[profiles]\nspark = 3\n', ["profile 'spark'", "table"]),
    ('profiles = 3\n', ["[profiles]"]),
    ('[core]\nframe_ms = -1\n', ["[core]", "'frame_ms'", "positive"]),
    ('[core]\nframe_ms = "fast"\n', ["[core]", "'frame_ms'"]),
])
def test_bad_config_messages_name_file_profile_field(tmp_path, text, words):
    msg = _err(tmp_path, text)
    assert str(tmp_path / "bad.toml") in msg
    for word in words:
        assert word in msg, (word, msg)
    assert "\n" not in msg  # one line


def test_not_utf8_and_folder_and_unreadable(tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'[profiles.spark]\nchip = "\xff\xfe"\n')
    with pytest.raises(ConfigError, match="bad.toml: not valid TOML: not UTF-8"):
        load_config(config_file=bad, env={})
    folder = tmp_path / "cfg.toml"
    folder.mkdir()
    with pytest.raises(ConfigError, match="cfg.toml: cannot read: it is a folder"):
        load_config(config_file=folder, env={})
    ok = tmp_path / "ok.toml"
    ok.write_text("[core]\nframe_ms = 8\n")

    real_open = Path.open

    def denied(self, *a, **kw):
        if self.name == "ok.toml":
            raise PermissionError(13, "Permission denied")
        return real_open(self, *a, **kw)

    monkeypatch.setattr(Path, "open", denied)  # root can read a chmod-000 file in tests
    with pytest.raises(ConfigError, match="ok.toml: cannot read: Permission denied"):
        load_config(config_file=ok, env={})


def test_project_layer_error_names_the_project_file(tmp_path):
    (tmp_path / ".spark.toml").write_text('[profiles.spark]\nbackend = "replay"\n'
                                          'tokens_per_s = 9.0\ncontext_window = 0\n')
    with pytest.raises(ConfigError) as exc:
        load_config(project_root=tmp_path, env={})
    assert ".spark.toml: profile 'spark': field 'context_window'" in str(exc.value)


def test_other_areas_tables_are_left_alone(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text('[slop]\nlimit = 3\n[ui]\ntheme = "x"\n[detectors]\na = 1\n'
                    '[profiles.spark]\nbackend = "replay"\ntokens_per_s = 9.0\n')
    assert "spark" in load_config(config_file=path, env={}).profiles


def test_serve_missing_env_var_exit_2_names_everything(tmp_path):
    import os
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text('[profiles.cloud]\nbackend = "openai"\nbase_url = "https://x/v1"\n'
                   'api_model = "m"\napi_key_env = "SPARK_TEST_ABSENT_KEY"\n')
    env = {k: v for k, v in os.environ.items() if k != "SPARK_TEST_ABSENT_KEY"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    r = subprocess.run([sys.executable, "-m", "tui.cli", "core", "serve", "--config", str(bad),
                        "--port", "0"], env=env, capture_output=True, text=True, timeout=30,
                       check=False)
    assert r.returncode == 2 and r.stdout == ""
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert str(bad) in line and "profile 'cloud'" in line and "'api_key_env'" in line
    assert "SPARK_TEST_ABSENT_KEY" in line


def test_explicit_config_points_the_demo_at_a_model_without_mixing(tmp_path):
    (tmp_path / ".spark").mkdir()
    (tmp_path / ".spark" / "demo").write_text("demo\n")
    cfg_file = tmp_path / "live.toml"
    cfg_file.write_text('[profiles.spark]\nbackend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
                        'api_model = "m"\n')
    cfg = load_config(config_file=cfg_file, project_root=tmp_path, env={})
    spark = cfg.profiles["spark"]
    assert spark.backend == "openai" and spark.cassettes == () and spark.chip is None
    assert cfg.profiles["base"].backend == "replay"  # the demo's other profile stays
