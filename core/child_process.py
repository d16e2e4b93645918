"""Start one of this package's modules as a child interpreter, talking over a socket pair.

A fresh interpreter (`python -m core.…`) rather than multiprocessing's spawn: spawn
re-imports the parent's main module, which an app launched from a script may not guard.
The child gets its end of the socket as a file descriptor (its one argument) and exits
when the socket closes (the app ended, even by a crash). The check worker and the
indexer start their children here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])  # the folder that holds core/


def child_env(defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the package root first on PYTHONPATH (the child
    imports this checkout's `core`, whatever else is installed), and `defaults` for the
    variables that are not set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for name, value in (defaults or {}).items():
        env.setdefault(name, value)
    return env


def spawn_module(module: str, *, env_defaults: Mapping[str, str] | None = None) -> tuple[Connection, subprocess.Popen]:
    """`python -m module FD` on one end of a socket pair; the other end, as a Connection,
    and the process. An OSError (no interpreter, no fds left) is raised with no socket left open."""
    ours, theirs = socket.socketpair()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=child_env(env_defaults), close_fds=True)
    except OSError:
        ours.close()
        raise
    finally:
        theirs.close()
    return Connection(ours.detach()), proc
