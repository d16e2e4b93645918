"""Who may drive the core: loopback by default, a shared token for anything else.

The core spends the user's API credits, so binding a non-loopback address requires a
token. It is generated once, stored in the user's config folder with mode 0600, and the
client sends it at the websocket handshake as ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

TOKEN_ENV = "SPARK_CORE_TOKEN"


def token_file() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("sparkstation")) / "core_token"


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_or_create_token(path: Path | None = None) -> str:
    """Read the token, creating it (mode 0600, never group/world readable) on first use."""
    path = path or token_file()
    if path.is_file():
        token = path.read_text(encoding="utf-8").strip()
        if token:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            return token
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    os.chmod(path, 0o600)
    return token


def client_token(explicit: str | None = None) -> str | None:
    """The token a client sends: explicit, else $SPARK_CORE_TOKEN, else the stored file."""
    if explicit:
        return explicit
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    path = token_file()
    if path.is_file():
        return path.read_text(encoding="utf-8").strip() or None
    return None


def check_bearer(header: str | None, token: str) -> bool:
    if not header or not header.startswith("Bearer "):
        return False
    return secrets.compare_digest(header[len("Bearer "):].strip(), token)
