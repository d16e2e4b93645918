"""One validated config: every table checked, every problem one line naming file and field."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import ConfigError, load_settings


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("SPARK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("SPARK_DEMO_PROFILES", raising=False)


def _project(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    (root / ".spark.toml").write_text(text, encoding="utf-8")
    return root


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as exc:
        load_settings(project_root=_project(tmp_path, text), env={})
    return str(exc.value)


@pytest.mark.parametrize("text,words", [
    ('[guards]\nsensitive_mode = 3\n', ["[guards]", "'sensitive_mode'", "a string"]),
    ('[guards]\nsensitive_mode = "sometimes"\n', ["[guards]", "sensitive_mode", "'sometimes'"]),
    ('[guards]\nsensitive_globs = "*.pem"\n', ["[guards]", "'sensitive_globs'", "a list"]),
    ('[guards]\ndwell_min_s = -1\n', ["[guards]", "'dwell_min_s'", "negative"]),
    ('[guards]\nsensitiv_mode = "off"\n', ["[guards]", "did you mean 'sensitive_mode'"]),
    ('guards = 3\n', ["[guards] must be a table"]),
    ('[ui]\ntheme = 3\n', ["[ui]", "'theme'"]),
    ('[ui]\ncolour = "red"\n', ["[ui]", "unknown field 'colour'"]),
    ('[ui.keys]\naccept = 3\n', ["[ui.keys]", "'accept'"]),
    ('[ui]\nadd_mentioned = "yes"\n', ["[ui]", "'add_mentioned'", "true or false"]),
    ('[verify]\ncommand = 3\n', ["[verify]", "'command'"]),
    ('[verify]\ncommand = ""\n', ["[verify]", "'command'", "empty"]),
    ('[verify]\ntimeout_s = -1\n', ["[verify]", "'timeout_s'", "negative"]),
    ('[verify]\ncommand = "pytest \'-q"\n', ["[verify]", "command"]),
    ('[gaurds]\nsensitive_mode = "off"\n', ["[gaurds]", "did you mean [guards]"]),
    ('[profiles.x]\nbackend = "openai"\n', ["profile 'x'", "'base_url'"]),
    ('[guards\n', ["not valid TOML"]),
])
def test_every_table_is_checked(tmp_path, text, words):
    msg = _error(tmp_path, text)
    assert ".spark.toml" in msg
    for word in words:
        assert word in msg, (word, msg)
    assert "\n" not in msg


def test_guard_error_names_the_file_that_set_the_field(tmp_path):
    user = tmp_path / "cfg" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[guards]\nsensitive_mode = "nope"\n')
    root = _project(tmp_path, '[guards]\ndwell_min_s = 1\n')
    with pytest.raises(ConfigError) as exc:
        load_settings(project_root=root, env={})
    assert str(user) in str(exc.value)


def test_layers_merge_every_table(tmp_path):
    user = tmp_path / "cfg" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[ui]\ntheme = "paper"\n[ui.keys]\naccept = "y"\n'
                    '[guards]\nsensitive_mode = "off"\n')
    root = _project(tmp_path, '[ui]\nadd_mentioned = false\n[ui.keys]\nreject = "n"\n'
                    '[guards]\ndwell_min_s = 0.5\n[verify]\ncommand = ["pytest", "-q"]\n')
    s = load_settings(project_root=root, env={})
    assert s.theme == "paper" and s.add_mentioned is False
    assert s.keys == {"accept": "y", "reject": "n"}
    assert s.guards == {"sensitive_mode": "off", "dwell_min_s": 0.5}
    assert s.verify == {"command": ["pytest", "-q"]}
    assert s.profiles == {}
    assert s.sources[-1] == root / ".spark.toml"


def test_other_tools_tables_are_left_alone(tmp_path):
    s = load_settings(project_root=_project(tmp_path, '[tool.x]\na = 1\n[slop]\nb = 2\n'), env={})
    assert s.guards == {}


_VALUES = st.one_of(st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=6),
                    st.booleans(), st.lists(st.text(max_size=3), max_size=2))
_KEYS = st.sampled_from(["sensitive_mode", "sensitive_globs", "dwell_min_s",
                         "dwell_lines_per_second", "fast_profiles", "theme", "keys",
                         "command", "timeout_s", "bogus"])


def _toml_value(v: object) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(v), repr(v))
    return json.dumps(v)


@settings(max_examples=60, deadline=None)
@given(table=st.sampled_from(["guards", "ui", "verify"]),
       items=st.dictionaries(_KEYS, _VALUES, max_size=3))
def test_any_table_either_loads_or_fails_with_one_line(tmp_path_factory, table, items):
    """Property: whatever a table holds, the loader answers Settings or one ConfigError
    line naming the file; and what loads, the guards accept too (no later traceback)."""
    from core.guards.dwell import DwellGuard
    from core.guards.sensitive import SensitivePolicy

    tmp = tmp_path_factory.mktemp("p")
    body = "".join(f"{k} = {_toml_value(v)}\n" for k, v in items.items())
    (tmp / ".spark.toml").write_text(f"[{table}]\n{body}", encoding="utf-8")
    try:
        s = load_settings(project_root=tmp, env={})
    except ConfigError as exc:
        assert ".spark.toml" in str(exc) and "\n" not in str(exc)
        return
    SensitivePolicy.from_config({"guards": s.guards})
    DwellGuard.from_config({"guards": s.guards})


def test_spark_exits_2_on_a_bad_guards_table_before_the_app_starts(tmp_path):
    """The reported crash: a malformed [guards] gave a traceback and exit 1."""
    root = _project(tmp_path, '[guards]\nsensitive_mode = 3\n')
    env = {**os.environ, "SPARK_CONFIG_DIR": str(tmp_path / "cfg"),
           "SPARK_STATE_DIR": str(tmp_path / "state"), "TERM": "dumb"}
    proc = subprocess.run([sys.executable, "-m", "tui.cli", str(root)], env=env, check=False,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "[guards]" in proc.stderr and "sensitive_mode" in proc.stderr


def test_demo_marker_and_its_recorded_prompts(tmp_path):
    from core.demo import is_demo, recorded_prompts, write_demo

    root = write_demo(tmp_path / "demo", git=False)
    assert is_demo(root) and not is_demo(tmp_path)
    assert set(load_settings(project_root=root, env={}).profiles) == {"spark", "base"}
    prompts = recorded_prompts()
    assert ("docstrings for the report module", "Add docstrings to the functions in report.py") \
        in prompts
    assert all(not p.startswith("Your proposed change") for _, p in prompts)  # follow-ups out


async def test_a_replay_profile_without_cassettes_never_replays_the_demo(tmp_path):
    from core.client import CoreClient, CoreError
    from core.embedded import EmbeddedCore

    root = _project(tmp_path, '[profiles.mine]\nbackend = "replay"\npacing = "pinned"\n'
                              'tokens_per_s = 5000.0\n')
    core = EmbeddedCore(project_root=root)
    client = await CoreClient.connect(core.start())
    try:
        stream = await client.generate("mine", [{"role": "user", "content": "Add docstrings "
                                                 "to the functions in report.py"}])
        with pytest.raises(CoreError) as exc:
            async for _ in stream:
                pass
        assert exc.value.code == "no_cassettes"
    finally:
        await client.close()
        core.stop()
