"""A rebuild while another thread reads the previous proposal: a file's hunks are never
seen empty. The builder hands the same FileProposal to every rebuild that did not change
its file, and the rebuild orders its hunks; sorted in place, the list reads as empty to
other threads while the sort's key function runs (the UI thread drew the proposal then)."""

from __future__ import annotations

import sys
import threading

from core.answer import AnswerRun
from core.workspace.files import Workspace


def _answer(functions: int) -> str:
    blocks = []
    for n in range(functions):
        blocks.append(f"pkg/mod.py\n```python\n<<<<<<< SEARCH\ndef f{n}(x):\n    return x + {n}\n=======\n"
                      f"def f{n}(x):\n    return x - {n}\n>>>>>>> REPLACE\n```\n")
    return "Changes.\n\n" + "\n".join(blocks)


def test_a_files_hunks_are_never_seen_empty_during_a_rebuild(tmp_path):
    functions = 60
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("".join(f"def f{n}(x):\n    return x + {n}\n\n\n"
                                                     for n in range(functions)))
    (tmp_path / "pkg" / "other.py").write_text("def g(x):\n    return x\n")
    run = AnswerRun(Workspace(tmp_path), "change", "spark")
    run.feed(_answer(functions), 10)
    run.rebuild_proposal()
    shared = run.proposal.files[0]  # unchanged by the next rebuilds: handed out again
    assert len(shared.hunks) == functions
    seen_empty = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            if not shared.hunks:
                seen_empty.append(True)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(40):
            run.feed(f"\npkg/other.py\n```python\n<<<<<<< SEARCH\ndef g(x):\n=======\ndef g(x):  # {n}\n"
                     ">>>>>>> REPLACE\n```\n", 10)
            run.rebuild_proposal()
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(old)
    assert run.proposal.files[0] is shared or run.proposal.files[0].path == shared.path
    assert not seen_empty
