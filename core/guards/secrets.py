"""Secret scan for hunks before they are accepted, and redaction for everything we record.

Why our own rules and not detect-secrets 1.5 (the maintained library we checked first):
its ad-hoc `scan_line` runs every plugin with eager high-entropy search and no filters,
which gave 761 findings on `core/profiles.py` alone (0.7 ms a line); it keeps its settings
in a process-wide singleton, and it has no rule for Anthropic, Cerebras or Google keys.
The rules below are the provider formats published by each vendor plus two generic rules
(private key blocks, high-entropy values assigned to secret-looking names), each tested
on a real-looking sample and on this project's own tree (no false positives).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["RULES", "Rule", "SecretFinding", "redact", "scan_added_text", "scan_hunk",
           "shannon_entropy"]


@dataclass(frozen=True)
class Rule:
    """One detector: `kind` names it in findings and redactions; `group` is the secret part."""

    kind: str
    pattern: re.Pattern[str]
    description: str
    needles: tuple[str, ...]  # literal text one of which must occur: a cheap pre-check
    group: int = 0


@dataclass(frozen=True)
class SecretFinding:
    path: str
    line: int  # 1-based, within the scanned text
    kind: str
    preview_redacted: str  # the line with the secret replaced; safe to show and log

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "kind": self.kind,
                "preview": self.preview_redacted}


def _r(kind: str, needles: tuple[str, ...], pattern: str, description: str,
       group: int = 0) -> Rule:
    return Rule(kind, re.compile(pattern), description, needles, group)


# Order matters: a more specific rule claims its span before a broader one (anthropic
# before openai, stripe before the generic assignment rule).
RULES: tuple[Rule, ...] = (
    _r("private-key", ("PRIVATE KEY",), r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
       r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?",
       "PEM/OpenSSH/PGP private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP)"),
    _r("anthropic", ("sk-ant-",), r"\bsk-ant-[a-z]{3,8}\d{2}-[A-Za-z0-9_-]{32,}",
       "Anthropic API/admin key: sk-ant-api03-... (about 100 chars)"),
    _r("openai", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_-]*\d)"
       r"(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}",
       "OpenAI key: sk-... / sk-proj-... / sk-svcacct-... (32+ chars, letters and digits)"),
    _r("cerebras", ("csk-",), r"\bcsk-(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{32,}",
       "Cerebras Cloud key: csk- followed by 32+ alphanumerics"),
    _r("aws-access-key-id", ("AKIA", "ASIA", "ABIA", "ACCA"), r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
       "AWS access key id: AKIA/ASIA + 16 upper-case alphanumerics"),
    _r("github", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{50,})\b",
       "GitHub token: ghp_/gho_/ghu_/ghs_/ghr_ + 36, or fine-grained github_pat_..."),
    _r("gitlab", ("glpat-",), r"\bglpat-[A-Za-z0-9_-]{20,}", "GitLab personal access token: glpat-..."),
    _r("slack", ("xox", "hooks.slack.com"), r"\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/"
       r"T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
       "Slack token xoxb-/xoxp-/xoxa-/xoxs-/xoxr-... or incoming-webhook URL"),
    _r("google-api-key", ("AIza",), r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
       "Google API key: AIza + 35 chars"),
    _r("stripe", ("_live_", "_test_"), r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,}",
       "Stripe secret or restricted key: sk_live_/rk_live_/sk_test_..."),
    _r("huggingface", ("hf_",), r"\bhf_[A-Za-z0-9]{34,}\b", "Hugging Face token: hf_ + 34+"),
    _r("jwt", ("eyJ",), r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
       "JSON Web Token: base64url header.payload.signature, header and payload JSON"),
    _r("url-credentials", ("://",), r"\b[a-z][a-z0-9+.-]{1,20}://[^/\s:@\"']{1,64}:(?!(?i:password|passwd|secret|pass)@)([^/\s:@\"'$<{]{6,})@",
       "password embedded in a URL (scheme://user:PASSWORD@host)", group=1),
)

# name = "value" / name: 'value' / NAME=value (.env) where the name looks secret.
_SECRET_NAME = (r"(?:[A-Za-z0-9_.-]*?(?:secret|passw(?:or)?d|passwd|pwd|api[_-]?key|apikey|"
                r"access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|"
                r"bearer|private[_-]?key|client[_-]?secret|credentials?|token)[A-Za-z0-9_.-]*)")
_NAME_HINT = re.compile(r"(?i)secret|passw|pwd|api[_-]?key|access[_-]?key|token|bearer|"
                        r"private[_-]?key|credential")
_ASSIGNMENT = re.compile(
    r"(?i)(?P<name>" + _SECRET_NAME + r")[\"']?\s*(?::=|=>|[:=])\s*"
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\s]{16,256})(?P=q)|(?P<bare>[A-Za-z0-9+/=_.~-]{16,256})(?=\s|$|[;,]))")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_.~-]+")
_PLACEHOLDER = re.compile(r"(?i)example|placeholder|changeme|dummy|your[_-]|xxxx|\*\*\*|redacted|"
                          r"^test|fake|sample")
ASSIGNMENT_MIN_ENTROPY = 3.5  # bits/char: random base64/hex keys score 3.7-5.5, words ~2.5-3.3
GENERIC_KIND = "high-entropy-assignment"


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s own character distribution."""
    if not value:
        return 0.0
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(value: str) -> bool:
    """A credential-like value: token characters, letters and digits, high entropy.

    Env-var names (ALL_CAPS), dotted identifiers, paths and placeholders are rejected,
    so `api_key_env = "CEREBRAS_API_KEY"` and `token = settings.auth_token` stay quiet.
    """
    if not _TOKEN_CHARS.fullmatch(value) or _PLACEHOLDER.search(value):
        return False
    if re.fullmatch(r"[A-Z0-9_]+|[a-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+",
                    value) and not re.search(r"\d.*[A-Za-z]|[A-Za-z].*\d", value):
        return False
    if not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)):
        return False
    return shannon_entropy(value) >= ASSIGNMENT_MIN_ENTROPY


def _hinted_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line holding a secret-looking name: the assignment rule is
    costly, so it runs only there."""
    spans: list[tuple[int, int]] = []
    for m in _NAME_HINT.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if spans and spans[-1][0] == start:
            continue
        end = text.find("\n", m.end())
        spans.append((start, len(text) if end < 0 else end))
    return spans


def _spans(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, kind) secret spans, earlier rules first."""
    found: list[tuple[int, int, str]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _ in found)

    for rule in RULES:
        if not any(n in text for n in rule.needles):
            continue
        for m in rule.pattern.finditer(text):
            start, end = m.span(rule.group)
            if start >= 0 and free(start, end):
                found.append((start, end, rule.kind))
    for line_start, line_end in _hinted_lines(text):
        for m in _ASSIGNMENT.finditer(text, line_start, line_end):
            group = "quoted" if m.group("quoted") is not None else "bare"
            value = m.group(group)
            start, end = m.span(group)
            if _looks_random(value) and free(start, end):
                found.append((start, end, GENERIC_KIND))
    return sorted(found)


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    out, pos = [], 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(f"[REDACTED:{kind}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``.

    Recorders, cassettes and logs call this on every string they write, so a key the model
    (or the user) typed never reaches disk.
    """
    if not text:
        return text
    spans = _spans(text)
    return _replace(text, spans) if spans else text


def scan_added_text(path: str, text: str) -> list[SecretFinding]:
    """Secrets in the lines a hunk adds (``text``: the added lines joined by newlines).

    One finding per secret; ``line`` is 1-based within ``text``, the preview is the line
    (trimmed to 160 chars) with the secret redacted.
    """
    spans = _spans(text)
    if not spans:
        return []
    lines = text.split("\n")
    findings = []
    for start, _end, kind in spans:
        line_no = text.count("\n", 0, start) + 1
        preview = redact(lines[line_no - 1]).strip()[:160]
        findings.append(SecretFinding(path, line_no, kind, preview))
    return findings


def scan_hunk(hunk: object) -> list[SecretFinding]:
    """`scan_added_text` for an edit hunk (anything with `.path` and `.new_lines`, lines
    keeping their line ends, as `core.edits.hunks.Hunk`); ``line`` is within the hunk's
    new lines."""
    new_lines = getattr(hunk, "new_lines", [])
    text = "".join(line if line.endswith("\n") else line + "\n" for line in new_lines)
    return scan_added_text(str(getattr(hunk, "path", "")), text)
