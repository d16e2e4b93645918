"""`spark apply` and `spark undo` end to end through the `spark` dispatcher."""

from __future__ import annotations

import io
import json

from tui.cli import main

GOOD = """app.py
```python
<<<<<<< SEARCH
X = 1
=======
X = 2
>>>>>>> REPLACE
```
"""
BAD = GOOD + """
lib.py
```python
<<<<<<< SEARCH
def missing_function():
=======
pass
>>>>>>> REPLACE
```
"""


def _setup(tmp_path):
    (tmp_path / "app.py").write_text("X = 1\nY = 2\n")
    (tmp_path / "lib.py").write_text("L = 1\n")
    return tmp_path


def test_apply_all_then_undo(tmp_path, capsys):
    root = _setup(tmp_path)
    ans = tmp_path / "answer.md"
    ans.write_text(GOOD)
    assert main(["apply", str(ans), "--root", str(root)]) == 0
    assert (root / "app.py").read_text() == "X = 2\nY = 2\n"
    assert "1 file changed, 0 refused" in capsys.readouterr().out
    assert main(["undo", "--root", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["undone"] and doc["restored"] == ["app.py"]
    assert (root / "app.py").read_text() == "X = 1\nY = 2\n"
    assert main(["undo", "--root", str(root)]) == 1
    assert "nothing to undo" in capsys.readouterr().out


def test_check_writes_nothing_and_json_is_one_document(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(BAD))
    assert main(["apply", "--check", "--json", "-", "--root", str(root)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["check"] and doc["written"] == [] and not doc["ok"]
    assert doc["files"] == [{"path": "app.py", "is_new": False, "hunks": 1, "added": 1,
                             "removed": 1, "deletion_heavy": None}]
    assert "lib.py: SEARCH text not found" in doc["refused"][0]["message"]
    assert (root / "app.py").read_text() == "X = 1\nY = 2\n"


def test_partial_apply_exits_1_and_lists_reasons(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(BAD))
    assert main(["apply", "--root", str(root)]) == 1
    out = capsys.readouterr()
    assert "refused: lib.py: SEARCH text not found" in out.err
    assert (root / "app.py").read_text() == "X = 2\nY = 2\n"
    assert (root / "lib.py").read_text() == "L = 1\n"


def test_a_file_gets_all_its_edits_or_none(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(GOOD + BAD.replace("lib.py", "app.py")))
    assert main(["apply", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "app.py: SEARCH text not found" in err and "all the edits" in err
    assert (root / "app.py").read_text() == "X = 1\nY = 2\n"


def test_deletion_heavy_whole_file_needs_force(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    big = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(20))
    (root / "big.py").write_text(big)
    answer = "big.py\n```python\ndef f3():\n    return 33\n```\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    assert main(["apply", "--root", str(root), "--no-commit"]) == 1
    assert "removes 59 of the file's 60 lines" in capsys.readouterr().err
    assert (root / "big.py").read_text() == big
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    assert main(["apply", "--root", str(root), "--no-commit", "--force"]) == 0
    assert (root / "big.py").read_text() == "def f3():\n    return 33\n"


def test_unusable_input_exits_2(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("Just prose, no edits.\n"))
    assert main(["apply", "--root", str(root)]) == 2
    assert "no edit blocks found" in capsys.readouterr().err
    assert main(["apply", str(tmp_path / "missing.md"), "--root", str(root)]) == 2
    assert main(["apply", "--root", str(tmp_path / "nope"), str(root / "app.py")]) == 2


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_json_is_one_document_even_on_errors(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    cases = [(["apply", "--json", "--root", str(root)], b"Just prose.\n"),
             (["apply", "--json", str(tmp_path / "missing.md"), "--root", str(root)], b""),
             (["apply", "--json", "--root", str(tmp_path / "nope")], GOOD.encode()),
             (["apply", "--json", "--root", str(root)], b"\xff\xfe\xfa bad bytes \x80\n")]
    for argv, data in cases:
        _stdin(monkeypatch, data)
        assert main(argv) == 2
        out = capsys.readouterr()
        doc = json.loads(out.out)  # exactly one document, nothing else on stdout
        assert doc["ok"] is False and doc["error"] and doc["written"] == []
        assert "spark: error:" in out.err
    assert (root / "app.py").read_text() == "X = 1\nY = 2\n"


def test_stdin_bytes_utf8_bom_crlf_and_utf16(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    _stdin(monkeypatch, b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode())
    assert main(["apply", "--no-commit", "--root", str(root)]) == 0
    assert (root / "app.py").read_text() == "X = 2\nY = 2\n"
    _stdin(monkeypatch, GOOD.replace("X = 1", "Y = 2").replace("X = 2", "Y = 3")
           .encode("utf-16"))
    assert main(["apply", "--no-commit", "--root", str(root)]) == 0
    assert (root / "app.py").read_text() == "X = 2\nY = 3\n"


def test_a_huge_answer_is_handled(tmp_path, capsys, monkeypatch):
    root = _setup(tmp_path)
    noise = ("Some long prose line that is not an edit. " * 50 + "\n") * 4000  # ~8.6 MB
    _stdin(monkeypatch, (noise + GOOD + "x" * 1_000_000 + "\n").encode())
    assert main(["apply", "--json", "--no-commit", "--root", str(root)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["written"] == ["app.py"]
