from __future__ import annotations

import pytest

from core.guards.sensitive import GuardConfigError, SensitivePolicy

SENSITIVE = ["core/auth.py", "app/auth/views.py", "db/migrations/0001_init.py", ".env",
             "config/.env.local", "certs/server.pem", "lib/crypto_utils.py", "utils/encrypt.py",
             "src/oauth_client.py", "app/user_auth.py", "docs/SECURITY.md",
             "app/security/policy.py", "settings/secrets.toml", "aws_credentials.json",
             "./.env"]
ORDINARY = ["author.py", "src/authors/list.py", "invoicer/report.py", "README.md",
            "x/description.py", "x/script.py", "x/subscription.py", "core/session.py",
            "tests/test_dates.py"]


@pytest.mark.parametrize("path", SENSITIVE)
def test_default_globs_flag_sensitive(path):
    assert SensitivePolicy().matches([path]) == [path]


@pytest.mark.parametrize("path", ORDINARY)
def test_default_globs_leave_ordinary(path):
    assert SensitivePolicy().matches([path]) == []


def test_modes():
    paths = ["invoicer/report.py", "app/auth/login.py"]
    flag = SensitivePolicy(mode="flag").check(paths, profile_is_fast=True)
    assert flag.action == "flag" and flag.flagged_paths == ["app/auth/login.py"]
    assert "app/auth/login.py" in flag.message
    block = SensitivePolicy(mode="require-base").check(paths, profile_is_fast=True)
    assert block.action == "block"
    deep = SensitivePolicy(mode="require-base").check(paths, profile_is_fast=False)
    assert deep.action == "allow" and deep.flagged_paths == ["app/auth/login.py"]
    off = SensitivePolicy(mode="off").check(paths, profile_is_fast=True)
    assert off.action == "allow" and off.flagged_paths == []
    clean = SensitivePolicy().check(["invoicer/report.py"], profile_is_fast=True)
    assert clean.action == "allow" and clean.message == ""


def test_from_config_whole_dict_or_table():
    whole = {"profiles": {}, "guards": {"sensitive_mode": "require-base",
                                        "sensitive_globs": ["billing/**"],
                                        "fast_profiles": ["spark", "mini"]}}
    p = SensitivePolicy.from_config(whole)
    assert p.mode == "require-base" and p.matches(["billing/x.py", "auth.py"]) == ["billing/x.py"]
    assert p.is_fast("mini") and not p.is_fast("base")
    extra = SensitivePolicy.from_config({"sensitive_globs_extra": ["billing/**"]})
    assert extra.matches(["billing/x.py", "auth.py"]) == ["billing/x.py", "auth.py"]
    assert SensitivePolicy.from_config(None).mode == "flag"


@pytest.mark.parametrize("bad", [{"sensitive_mode": "panic"}, {"sensitive_mode": 3},
                                 {"sensitive_globs": "auth/**"}, {"fast_profiles": [1]},
                                 {"guards": "on"}])
def test_bad_config_is_a_clear_error(bad):
    with pytest.raises(GuardConfigError, match="guards"):
        SensitivePolicy.from_config(bad)
