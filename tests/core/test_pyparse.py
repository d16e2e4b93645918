"""core.pyparse: CPython 3.11's transient SystemError on parallel AST construction is retried."""

from __future__ import annotations

import ast
import threading

import pytest

from core import pyparse


def test_a_transient_system_error_is_retried(monkeypatch):
    real = ast.parse
    calls = []

    def flaky(text, filename="<unknown>"):
        calls.append(filename)
        if len(calls) < 3:
            raise SystemError("AST constructor recursion depth mismatch (before=1, after=0)")
        return real(text, filename=filename)

    monkeypatch.setattr(ast, "parse", flaky)
    tree = pyparse.parse("x = 1\n", "a.py")
    assert isinstance(tree.body[0], ast.Assign) and calls == ["a.py"] * 3


def test_a_lasting_system_error_and_a_syntax_error_are_raised(monkeypatch):
    with pytest.raises(SyntaxError):
        pyparse.parse("def (:\n")

    def always(text, filename="<unknown>"):
        raise SystemError("broken")

    monkeypatch.setattr(ast, "parse", always)
    with pytest.raises(SystemError):
        pyparse.parse("x = 1\n")


def test_parses_in_several_threads_agree_with_one():
    text = "\n".join(f"def f{i}(a, b):\n    return [a + b for _ in range({i})]\n" for i in range(300))
    expected = ast.dump(ast.parse(text))
    results: list[str] = []

    def work() -> None:
        for _ in range(5):
            results.append(ast.dump(pyparse.parse(text)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 20
