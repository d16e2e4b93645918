"""Workspace.snapshot reuses the decoded text and fingerprint of the last read only when
the bytes read now are the same: after any sequence of writes (same length, other line
ends, a BOM, latin-1, binary, deleted) it says what decoding the file afresh says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.workspace.files import Workspace, WorkspaceError, decode, fingerprint_bytes

CONTENTS = st.one_of(
    st.sampled_from([b"a = 1\n", b"a = 2\n", b"a = 1\r\n", b"\xef\xbb\xbfa = 1\n", b"caf\xe9\n", b"x\0y\n", b""]),
    st.binary(max_size=40),
    st.none(),  # the file deleted
)


def _fresh(data: bytes | None) -> tuple[str, str, bool] | str:
    if data is None:
        return "", "absent", False
    try:
        return decode(data, "f.py")[0], fingerprint_bytes(data), True
    except WorkspaceError:
        return "refused"


@settings(max_examples=60, deadline=None)
@given(st.lists(CONTENTS, min_size=1, max_size=8))
def test_snapshot_after_any_writes_is_a_fresh_read(tmp_path_factory, writes):
    root = tmp_path_factory.mktemp("ws")
    ws = Workspace(root)
    path = root / "f.py"
    for data in writes:
        if data is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(data)
        try:
            got: tuple[str, str, bool] | str = ws.snapshot("f.py")
        except WorkspaceError:
            got = "refused"
        assert got == _fresh(data)
