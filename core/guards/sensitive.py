"""Sensitive paths: answers from the fast profile that touch auth, crypto, secrets,
credentials, security policy or migrations are flagged (or blocked) before accept.

Why: the Spark model card says it "should not be used for sensitive authentication or
security-critical logic" (seed 004). The policy lives in the `[guards]` table of the
config; globs use gitignore semantics (pathspec), matched on workspace-relative paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pathspec

from core.errors import SparkError

MODES = ("flag", "require-base", "off")

DEFAULT_GLOBS: tuple[str, ...] = (
    # authentication and authorisation
    "**/auth/**", "**/authn/**", "**/authz/**", "**/authentication/**", "**/authorization/**",
    "**/auth.*", "**/auth_*", "**/*_auth.*", "**/*_auth_*", "**/oauth*", "**/*login*",
    "**/*password*", "**/*permission*", "**/rbac*", "**/*session_token*",
    # cryptography
    "**/crypto/**", "**/crypto*", "**/*crypt*", "**/*cipher*", "**/*signing*",
    # secrets and credentials
    "**/secrets/**", "**/secrets*", "**/*secret*", "**/*credential*", "**/*token_store*",
    ".env", ".env.*", "**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx",
    "**/*.jks", "**/id_rsa*", "**/id_ed25519*", "**/.netrc", "**/.npmrc", "**/.pypirc",
    # security policy
    "**/security/**", "**/*security*", "**/SECURITY.md", "**/policies/**", "**/*sandbox*",
    "**/*firewall*", "**/csp*",
    # schema migrations (irreversible on real data)
    "**/migrations/**", "**/migrate/**", "**/alembic/**", "**/*migration*",
)
DEFAULT_FAST_PROFILES: tuple[str, ...] = ("spark",)


class GuardConfigError(SparkError, ValueError):
    """A bad `[guards]` table; the message names the key."""


@dataclass(frozen=True)
class SensitiveVerdict:
    flagged_paths: list[str]
    action: str  # "allow" | "flag" (confirm, or re-ask the deep profile) | "block"
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"flagged_paths": self.flagged_paths, "action": self.action,
                "message": self.message}


@dataclass
class SensitivePolicy:
    mode: str = "flag"
    globs: tuple[str, ...] = DEFAULT_GLOBS
    fast_profiles: tuple[str, ...] = DEFAULT_FAST_PROFILES
    _spec: pathspec.PathSpec = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise GuardConfigError(f"guards.sensitive_mode: {self.mode!r} is not one of "
                                   f"{', '.join(MODES)}")
        self.globs = tuple(self.globs)
        self.fast_profiles = tuple(self.fast_profiles)
        try:
            self._spec = pathspec.GitIgnoreSpec.from_lines(self.globs)
        except Exception as exc:  # pathspec raises several types for bad patterns
            raise GuardConfigError(f"guards.sensitive_globs: {exc}") from exc

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> SensitivePolicy:
        """From a whole config dict (with a `guards` table) or the `[guards]` table itself.

        Keys: `sensitive_mode`, `sensitive_globs` (replaces the defaults),
        `sensitive_globs_extra` (added to them), `fast_profiles`.
        """
        table = _guards_table(config)
        mode = table.get("sensitive_mode", "flag")
        if not isinstance(mode, str):
            raise GuardConfigError("guards.sensitive_mode must be a string")
        globs = _str_list(table, "sensitive_globs", DEFAULT_GLOBS)
        globs = globs + _str_list(table, "sensitive_globs_extra", ())
        fast = _str_list(table, "fast_profiles", DEFAULT_FAST_PROFILES)
        return cls(mode=mode, globs=globs, fast_profiles=fast)

    def is_fast(self, profile_name: str) -> bool:
        return profile_name in self.fast_profiles

    def matches(self, paths: Iterable[str]) -> list[str]:
        """The paths (workspace-relative, `/` separators) that a sensitive glob matches."""
        out = []
        for p in paths:
            norm = p.replace("\\", "/")
            while norm.startswith("./"):
                norm = norm[2:]
            norm = norm.lstrip("/")
            if self._spec.match_file(norm) and p not in out:
                out.append(p)
        return out

    def check(self, paths: list[str], profile_is_fast: bool) -> SensitiveVerdict:
        """What to do before an answer touching ``paths`` may be accepted."""
        if self.mode == "off":
            return SensitiveVerdict([], "allow", "")
        flagged = self.matches(paths)
        if not flagged:
            return SensitiveVerdict([], "allow", "")
        listing = ", ".join(flagged[:3]) + (f" (+{len(flagged) - 3} more)" if len(flagged) > 3
                                            else "")
        if not profile_is_fast:
            return SensitiveVerdict(flagged, "allow",
                                    f"sensitive path(s) {listing}: answered by the deep profile")
        if self.mode == "require-base":
            return SensitiveVerdict(flagged, "block",
                                    f"sensitive path(s) {listing}: the fast profile may not "
                                    "change these; re-ask the deep profile")
        return SensitiveVerdict(flagged, "flag",
                                f"sensitive path(s) {listing}: fast model touching auth/crypto/"
                                "secrets/security/migrations; confirm, or re-ask the deep profile")


def _guards_table(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise GuardConfigError("guards config must be a table")
    table = config.get("guards", config)
    if not isinstance(table, Mapping):
        raise GuardConfigError("[guards] must be a table")
    return table


def _str_list(table: Mapping[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = table.get(key)
    if value is None:
        return tuple(default)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise GuardConfigError(f"guards.{key} must be a list of strings")
    return tuple(value)
