"""`ast.parse` that survives CPython 3.11's thread race on AST construction.

Building AST objects in two threads at once (the verifier's syntax check beside the
indexer's or the review's parse) can raise ``SystemError: AST constructor recursion depth
mismatch`` (CPython gh-106905): the depth counter is shared by the interpreter, not the
thread. The error says nothing about the text, so the parse is tried again; a real
syntax error is still a ``SyntaxError``.
"""

from __future__ import annotations

import ast

ATTEMPTS = 4


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse(text), retried when another thread's parse trips CPython's depth check."""
    for attempt in range(ATTEMPTS):
        try:
            return ast.parse(text, filename=filename)
        except SystemError:
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
