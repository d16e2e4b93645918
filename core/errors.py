"""The one root of sparkstation's errors.

Every error that core raises on purpose derives from `SparkError`, so a caller (the app, a
CLI command, a worker) can tell "sparkstation refused this, with a message for the user" from a
bug with one `except SparkError`. Each package keeps its own subclass for finer handling.
"""

from __future__ import annotations


class SparkError(Exception):
    """A refusal or failure that carries a message meant for the user."""
