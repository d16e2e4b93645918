"""Presets, detection (env and loopback, against a real local server) and the config write."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import ConfigError, load_settings
from core.providers import PRESETS, detect_env, detect_servers, get_preset, profiles_for
from core.providers.write import write_profiles
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("SPARK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("SPARK_DEMO_PROFILES", raising=False)


def test_every_preset_makes_profiles_the_loader_accepts(tmp_path):
    env = {p.key_env: "k" for p in PRESETS.values() if p.key_env}
    for preset in PRESETS.values():
        profiles = profiles_for(preset, fast_model=None if preset.fast_model else "m")
        path = write_profiles(profiles, provider=preset.name, path=tmp_path / f"{preset.name}.toml",
                              env=env)
        loaded = load_settings(config_file=path, env=env).profiles
        assert set(loaded) == {"spark", "base"}
        assert loaded["spark"].base_url == preset.base_url
        assert loaded["spark"].api_key_env == preset.key_env


def test_required_presets_exist_with_their_key_variables():
    keys = {p.name: p.key_env for p in PRESETS.values()}
    assert keys["cerebras"] == "CEREBRAS_API_KEY" and keys["openai"] == "OPENAI_API_KEY"
    assert keys["groq"] == "GROQ_API_KEY" and keys["openrouter"] == "OPENROUTER_API_KEY"
    ports = {p.name: p.port for p in PRESETS.values() if p.port}
    assert ports == {"ollama": 11434, "lmstudio": 1234, "llamacpp": 8080, "vllm": 8000,
                     "sglang": 30000}
    assert get_preset("LM Studio").name == "lmstudio" and get_preset("llama.cpp").name == "llamacpp"
    with pytest.raises(ConfigError, match="known: cerebras"):
        get_preset("nope")


def test_hwmodel_pair_only_where_known():
    cerebras = profiles_for(get_preset("cerebras"))
    assert cerebras["spark"]["chip"] == "cs-3" and cerebras["spark"]["model"] == "gpt-oss-120b"
    # another model on the same provider is not the model hwmodel would predict
    other = profiles_for(get_preset("cerebras"), fast_model="llama3.1-8b")
    assert "chip" not in other["spark"]
    assert "chip" not in profiles_for(get_preset("openai"))["spark"]


def test_detect_env_only_non_empty_keys():
    found = detect_env({"CEREBRAS_API_KEY": "x", "OPENAI_API_KEY": " ", "GROQ_API_KEY": "g"})
    assert [f.preset.name for f in found] == ["cerebras", "groq"]
    assert "CEREBRAS_API_KEY is set" == found[0].source


def test_detect_servers_lists_models_and_ignores_closed_ports():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with FakeOpenAI(model="qwen2.5-coder:7b") as fake:
        port = int(fake.url.rsplit(":", 1)[1].split("/")[0])
        found = detect_servers([(get_preset("ollama"), port), (get_preset("vllm"), closed)],
                               timeout=2.0)
    assert len(found) == 1
    assert found[0].base_url == f"http://127.0.0.1:{port}/v1"
    assert found[0].models == ("qwen2.5-coder:7b",)
    assert found[0].fast_model == "qwen2.5-coder:7b" == found[0].deep_model


def test_write_keeps_the_users_other_settings(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('# my settings\n[ui]\ntheme = "paper"\n\n[profiles.spark]\nbackend = "replay"\n'
                    'tokens_per_s = 5.0\n\n[profiles.mine]\nbackend = "replay"\ntokens_per_s = 3.0\n')
    write_profiles(profiles_for(get_preset("llamacpp"), fast_model="smol"), provider="llamacpp",
                   path=path, env={})
    text = path.read_text()
    assert text.startswith("# my settings\n[ui]\ntheme = \"paper\"")
    doc = tomllib.loads(text)
    assert doc["profiles"]["mine"]["tokens_per_s"] == 3.0
    assert doc["profiles"]["spark"]["api_model"] == "smol"
    assert doc["profiles"]["spark"]["backend"] == "openai"


def test_a_write_that_would_break_the_config_changes_nothing(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[profiles.spark]\nbackend = "replay"\ntokens_per_s = 5.0\n')
    before = path.read_text()
    with pytest.raises(ConfigError, match="CEREBRAS_API_KEY"):  # no key in env
        write_profiles(profiles_for(get_preset("cerebras")), provider="cerebras", path=path, env={})
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp file left


def _spark(*args: str, tmp_path, extra_env=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"SPARK_CONFIG_DIR": str(tmp_path / "cfg"), **(extra_env or {})})
    return subprocess.run([sys.executable, "-m", "tui.cli", *args], env=env, check=False,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_spark_init_non_interactive(tmp_path):
    with FakeOpenAI(model="smollm2") as fake:
        proc = _spark("init", "--provider", "llamacpp", "--base-url", fake.url, "--model",
                      "smollm2", "--yes", "--no-probe", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = tomllib.loads((tmp_path / "cfg" / "config.toml").read_text())
    assert doc["profiles"]["spark"]["api_model"] == "smollm2"
    assert doc["profiles"]["spark"]["base_url"] == fake.url


def test_spark_init_from_env_key_and_its_errors(tmp_path):
    proc = _spark("init", "--yes", "--no-probe", tmp_path=tmp_path,
                  extra_env={"GROQ_API_KEY": "gsk-test"})
    assert proc.returncode == 0, proc.stderr
    assert "Groq" in proc.stdout
    proc = _spark("init", "--yes", "--no-probe", tmp_path=tmp_path / "other")
    assert proc.returncode == 2 and "no provider found" in proc.stderr
    proc = _spark("init", "--provider", "cerebras", "--yes", "--no-probe", tmp_path=tmp_path)
    assert proc.returncode == 2 and "CEREBRAS_API_KEY" in proc.stderr


async def test_two_models_of_one_server_stream_side_by_side(tmp_path, monkeypatch):
    """What the first-run screen writes for a server with two models runs as a race does:
    both profiles at once on one endpoint, each request naming its own model."""
    import asyncio

    from core.client import CoreClient
    from core.embedded import EmbeddedCore
    from tests.fakes.openai_server import Reply

    with FakeOpenAI(model="small") as fake:
        fake.default = Reply.text("one two three four", ttft_s=0.02, delay_s=0.002)
        profiles = profiles_for(get_preset("llamacpp"), fast_model="small", deep_model="large",
                                base_url=fake.url)
        path = write_profiles(profiles, provider="llamacpp", path=tmp_path / "c.toml", env={})
        project = tmp_path / "p"
        project.mkdir()
        core = EmbeddedCore(project_root=project, config_file=path)
        client = await CoreClient.connect(core.start())
        try:
            streams = [await client.generate(name, [{"role": "user", "content": "hi"}])
                       for name in ("spark", "base")]

            async def drain(stream):
                async for _ in stream:
                    pass
                return stream.done

            dones = await asyncio.gather(*(drain(s) for s in streams))
        finally:
            await client.close()
            core.stop()
    assert [d.reason for d in dones] == ["stop", "stop"]
    assert sorted(r.json["model"] for r in fake.requests if r.json) == ["large", "small"]
    assert all(d.timing["ttft_ms"] > 0 for d in dones)

_NAMES = st.sampled_from(["spark", "base", "mine", "work", "spark2"])


@settings(max_examples=40, deadline=None)
@given(existing=st.lists(_NAMES, max_size=4, unique=True),
       theme=st.sampled_from(["", "paper", "wafer"]), comment=st.booleans())
def test_write_replaces_only_spark_and_base(tmp_path_factory, existing, theme, comment):
    """Property: whatever the user's config holds, the write leaves a config the loader
    accepts, with the new spark/base, every other profile and [ui] as they were."""
    path = tmp_path_factory.mktemp("w") / "config.toml"
    parts = ["# keep this comment\n"] if comment else []
    if theme:
        parts.append(f'[ui]\ntheme = "{theme}"\n\n')
    for i, name in enumerate(existing):
        parts.append(f'[profiles.{name}]\nbackend = "replay"\ntokens_per_s = {i + 1}.0\n\n')
    path.write_text("".join(parts))
    write_profiles(profiles_for(get_preset("vllm"), fast_model="a", deep_model="b"),
                   provider="vllm", path=path, env={})
    text = path.read_text()
    doc = tomllib.loads(text)
    assert doc["profiles"]["spark"]["api_model"] == "a" and doc["profiles"]["base"]["api_model"] == "b"
    for i, name in enumerate(existing):
        if name not in ("spark", "base"):
            assert doc["profiles"][name] == {"backend": "replay", "tokens_per_s": i + 1.0}
    assert doc.get("ui", {}).get("theme", "") == theme
    assert ("# keep this comment" in text) == comment
    assert set(load_settings(config_file=path, env={}).profiles) == {"spark", "base"} | set(existing)


def test_spark_init_list_is_one_json_document(tmp_path):
    import json

    proc = _spark("init", "--list", "--no-probe", tmp_path=tmp_path,
                  extra_env={"OPENROUTER_API_KEY": "k"})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["presets"]["cerebras"]["key_env"] == "CEREBRAS_API_KEY"
    assert [d["provider"] for d in doc["detected"]] == ["openrouter"]
    assert not (tmp_path / "cfg" / "config.toml").exists()  # listing writes nothing
