"""A diff may decide a file's final newline (`\\ No newline at end of file`); otherwise
the file keeps its own, whatever the edit's text ends with."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.workspace.changes import prepare
from core.workspace.files import Workspace

lines = st.lists(st.text(alphabet="abc =()", min_size=1, max_size=8), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(old=lines, new=lines, old_final=st.booleans(), decided=st.none() | st.booleans(),
       crlf=st.booleans())
def test_final_newline_is_the_files_unless_the_edit_decides(tmp_path_factory, old, new,
                                                             old_final, decided, crlf):
    root = tmp_path_factory.mktemp("ws")
    nl = "\r\n" if crlf else "\n"
    (root / "a.txt").write_bytes((nl.join(old) + (nl if old_final else "")).encode())
    ws = Workspace(root)
    record = prepare(ws, "a.txt", "\n".join(new) + "\n", final_newline=decided)
    want_final = old_final if decided is None else decided
    if len(old) == 1 and not old_final:
        nl = "\n"  # a file with no line end has no newline style of its own
    assert record.after == (nl.join(new) + (nl if want_final else "")).encode()


def test_a_new_file_may_be_created_without_a_final_newline(tmp_path):
    ws = Workspace(tmp_path)
    assert prepare(ws, "n.txt", "x\n", final_newline=False).after == b"x"
    assert prepare(ws, "n.txt", "x").after == b"x\n"
