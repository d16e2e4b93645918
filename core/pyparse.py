"""`ast.parse` that is safe when several threads parse at once.

Building AST objects in two threads at once (the verifier's syntax check beside the
indexer's or the review's parse) can raise ``SystemError: AST constructor recursion depth
mismatch`` in CPython 3.11 (gh-106905): the depth counter belongs to the interpreter, not
the thread. Every parse in core goes through `parse`, which holds one lock while the tree
is built (a parse holds the GIL throughout, so the lock costs no parallelism) and tries
again if a parse outside it still trips the check. A real syntax error is still a
``SyntaxError``.
"""

from __future__ import annotations

import ast
import threading

ATTEMPTS = 4
_LOCK = threading.Lock()


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse(text), one thread at a time, retried on CPython's spurious SystemError."""
    for attempt in range(ATTEMPTS):
        try:
            with _LOCK:
                return ast.parse(text, filename=filename)
        except SystemError:
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
