"""Each rule on a real-looking sample built at run time (so the tree holds no key-like
literal), the things that must stay quiet, redaction, and the project's own tree."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from core.guards.secrets import RULES, redact, scan_added_text, scan_hunk, shannon_entropy

ROOT = Path(__file__).resolve().parents[3]
_rng = random.Random(7)
ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    """Random characters, with a digit and a letter so every rule's shape is met."""
    body = "".join(_rng.choice(alphabet) for _ in range(n - 2))
    return body + _rng.choice(string.digits) + _rng.choice(string.ascii_lowercase) \
        if alphabet is ALNUM else "".join(_rng.choice(alphabet) for _ in range(n))


def b64url(n: int) -> str:
    return rand(n, ALNUM + "-_")


UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits

SAMPLES: dict[str, str] = {
    "openai": 'OPENAI_KEY = "' + "sk-" + "proj-" + b64url(120) + '"',
    "anthropic": "client = Anthropic(api_key='" + "sk-" + "ant-" + "api03-" + b64url(93) + "AA')",
    "cerebras": 'headers = {"Authorization": "Bearer ' + "c" + "sk-" + rand(48, LOWER_DIGITS)
                + '"}',
    "aws-access-key-id": "aws_access_key_id = " + "AK" + "IA" + rand(16, UPPER_DIGITS),
    "github": 'token: "' + "gh" + "p_" + rand(36) + '"',
    "gitlab": "GL = '" + "gl" + "pat-" + rand(20) + "'",
    "slack": 'SLACK = "' + "xo" + "xb-" + rand(12, string.digits) + "-" + rand(24) + '"',
    "google-api-key": "const key = '" + "AI" + "za" + "Sy" + b64url(33) + "';",
    "stripe": "stripe.api_key = '" + "sk" + "_live_" + rand(24) + "'",
    "huggingface": "HF = '" + "h" + "f_" + rand(34) + "'",
    "jwt": "auth = '" + "ey" + "J" + b64url(30) + ".ey" + "J" + b64url(60) + "." + b64url(43) + "'",
    "url-credentials": 'DB = "postgres://app:' + rand(16) + '@db.internal:5432/app"',
    "private-key": "-----BEGIN " + "RSA PRIVATE" + " KEY-----\n" + b64url(64) + "\n" + b64url(64)
                   + "\n-----END " + "RSA PRIVATE" + " KEY-----",
    "high-entropy-assignment": 'client_secret = "' + rand(40) + '"',
}


def test_every_rule_has_a_sample():
    assert {r.kind for r in RULES} | {"high-entropy-assignment"} == set(SAMPLES)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_rule_detects_sample_and_redacts_it(kind):
    text = "def f():\n    pass\n" + SAMPLES[kind] + "\n"
    findings = scan_added_text("app/settings.py", text)
    assert [f.kind for f in findings] == [kind]
    assert findings[0].line == 3 and findings[0].path == "app/settings.py"
    assert f"[REDACTED:{kind}]" in findings[0].preview_redacted
    cleaned = redact(text)
    assert f"[REDACTED:{kind}]" in cleaned
    assert scan_added_text("x", cleaned) == []
    assert "def f():" in cleaned  # the rest survives


def test_private_key_block_fully_removed():
    cleaned = redact(SAMPLES["private-key"])
    assert cleaned == "[REDACTED:private-key]"


def test_env_file_bare_values():
    text = "DEBUG=1\nSTRIPE_SECRET=" + rand(32) + "\nAPI_KEY_ENV=CEREBRAS_API_KEY\n"
    findings = scan_added_text(".env", text)
    assert [(f.line, f.kind) for f in findings] == [(2, "high-entropy-assignment")]


QUIET = [
    'api_key_env = "CEREBRAS_API_KEY"',
    "token = settings.auth_token_value_here",
    'password = "correct horse battery staple"',
    'password = "changeme-changeme-123"',
    'SECRET_KEY = "your-secret-key-goes-here-1234"',
    'max_tokens = 4096',
    'tokens_per_s = 1000.0',
    'commit = "3f9a1c0d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a90"',  # not a secret-looking name
    'url = "https://user:password@example.com/"',
    'sk = "sk-learn"',
    'checksum = "sha256:abcdef"',
    "task-list-of-things-that-is-long-enough-to-be-an-id-1234",
    'token_file = "~/.config/sparkstation/token.txt"',
]


@pytest.mark.parametrize("line", QUIET)
def test_ordinary_code_stays_quiet(line):
    assert scan_added_text("a.py", line) == []
    assert redact(line) == line


def test_entropy_threshold_separates_words_from_keys():
    assert shannon_entropy("passwordpassword") < 3.5 < shannon_entropy(rand(32))
    assert shannon_entropy("") == 0.0


def test_no_false_positives_on_project_tree():
    """The project's own sources, tests and docs hold no secret: nothing may fire."""
    here = Path(__file__).resolve().parent
    hits = []
    for top in ("core", "hwmodel", "tui", "themes", "tests", "docs", "bench"):
        base = ROOT / top
        if not base.exists():
            continue
        for p in base.rglob("*"):
            if p.suffix not in {".py", ".toml", ".md", ".jsonl", ".tcss", ".json", ".txt"}:
                continue
            if here in p.parents or not p.is_file():
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
            hits += [f"{p.relative_to(ROOT)}:{f.line} {f.kind}: {f.preview_redacted}"
                     for f in scan_added_text(str(p), text)]
    assert hits == []


def test_scan_hunk_uses_the_edit_loops_hunk():
    from core.edits.hunks import make_hunks

    old = "import os\n\nDEBUG = True\n"
    new = "import os\n\nDEBUG = True\n" + SAMPLES["stripe"] + "\n"
    hunks = make_hunks("app/settings.py", old, new)
    findings = [f for h in hunks for f in scan_hunk(h)]
    assert [(f.path, f.line, f.kind) for f in findings] == [("app/settings.py", 1, "stripe")]
