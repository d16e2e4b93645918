"""Shared command-line conventions: one JSON document on stdout, errors on stderr with exit 2."""

from __future__ import annotations

import json
import sys
from typing import Any

from core.errors import SparkError


class CliError(SparkError):
    """A user-facing command-line error: printed as one line on stderr, exit code 2."""

    exit_code = 2


def print_json(document: Any) -> None:
    """Print exactly one JSON document on stdout."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, default=str))
    sys.stdout.write("\n")
    sys.stdout.flush()
