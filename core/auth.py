"""Who may drive the core: loopback by default, a shared token for anything else.

The core spends the user's API credits, so binding a non-loopback address requires a
token. It is generated once, stored in the user's config folder with mode 0600, and the
client sends it at the websocket handshake as ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import threading
from pathlib import Path

TOKEN_ENV = "SPARK_CORE_TOKEN"
_MIN_SECRET_CHARS = 6  # shorter values would blank ordinary words out of messages
_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Register a key or token so `redact` blanks it wherever it might leak to."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        with _secrets_lock:
            _secrets.add(value)


def redact(text: str) -> str:
    """`text` with every remembered secret replaced by '***'.

    Applied to error frames, because an endpoint may echo the key it refused (some
    do, in full) and upstream messages are passed on to the app.
    """
    if not _secrets or not isinstance(text, str):
        return text
    for value in sorted(_secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "***")
    return text


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
            remember_secret(token)
            return token
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    os.chmod(path, 0o600)
    remember_secret(token)
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
    """Constant-time comparison of an ``Authorization: Bearer`` header with the token.

    Compared as bytes: `compare_digest` raises on non-ASCII str, and a hostile header
    must be a plain refusal (401), not an exception in the handshake.
    """
    if not header or not header.startswith("Bearer "):
        return False
    given = header[len("Bearer "):].strip().encode("utf-8", "surrogateescape")
    return secrets.compare_digest(given, token.encode("utf-8"))
