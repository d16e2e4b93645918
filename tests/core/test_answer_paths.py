"""An answer in the app reads paths the way `spark apply` does: with the tree, so names
that only make sense as files of this project (a bare `runme` script) resolve."""

from __future__ import annotations

from core.answer import AnswerRun
from core.workspace.files import Workspace

ANSWER = """runme
```
<<<<<<< SEARCH
run:
\techo old
=======
run:
\techo new
>>>>>>> REPLACE
```
"""


def _paths(run: AnswerRun) -> list[str]:
    run.feed(ANSWER, 40)
    run.finish("stop")
    return [e.path for e in run.edits]


def test_a_bare_file_name_of_the_tree_is_a_path(tmp_path):
    (tmp_path / "runme").write_text("run:\n\techo old\n")
    assert _paths(AnswerRun(Workspace(tmp_path), "p", "spark")) == ["runme"]


def test_without_the_file_the_bare_name_is_not_taken(tmp_path):
    (tmp_path / "other.txt").write_text("x\n")
    assert "runme" not in _paths(AnswerRun(Workspace(tmp_path), "p", "spark"))


def test_the_parse_asks_the_tree_once_per_name(tmp_path, monkeypatch):
    """Every block's path line asked the tree (syscalls on the UI thread) again: now once
    per name and answer, with the same paths found."""
    (tmp_path / "runme").write_text("run:\n\techo old\n")
    ws = Workspace(tmp_path)
    asked: list[str] = []
    real = ws.exists

    def counting(rel: str) -> bool:
        asked.append(rel)
        return real(rel)

    monkeypatch.setattr(ws, "exists", counting)
    run = AnswerRun(ws, "p", "spark")
    run.feed(ANSWER * 5, 200)
    run.finish("stop")
    assert [e.path for e in run.edits] == ["runme"] * 5
    assert asked and len(asked) == len(set(asked))
