"""`spark dups scan|check` and `spark slop`: JSON contracts and errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tui.cli import main

FUNC = textwrap.dedent('''
    def mean_and_spread(values):
        total = 0.0
        count = 0
        for v in values:
            total += v
            count += 1
        if count == 0:
            return None
        return total / count, max(values) - min(values)
''')


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(FUNC)
    (tmp_path / "b.py").write_text(FUNC.replace("values", "xs").replace("mean_and", "avg"))
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def test_dups_scan_json(capsys, tree: Path) -> None:
    doc = run_json(capsys, "dups", "scan", str(tree), "--json")
    assert doc == {
        "functions": 2,
        "pairs": [{
            "a": {"path": "b.py", "symbol": "avg_spread", "line": 2},
            "b": {"path": "pkg/a.py", "symbol": "mean_and_spread", "line": 2},
            "similarity": 1.0,
            "type": 2,
        }],
    }


def test_dups_check_json(capsys, tree: Path, tmp_path: Path) -> None:
    new = tmp_path / "new.py"
    new.write_text("import math\n" + FUNC.replace("count", "n"))
    doc = run_json(capsys, "dups", "check", str(new), "--root", str(tree), "--json")
    twins = {(m["twin_path"], m["clone_type"]) for m in doc["matches"]}
    assert twins == {("pkg/a.py", 2), ("b.py", 2)}
    assert all(m["new_symbol"] == "mean_and_spread" and m["new_line"] == 3
               for m in doc["matches"])


def test_dups_check_does_not_match_a_file_with_itself(capsys, tree: Path) -> None:
    doc = run_json(capsys, "dups", "check", str(tree / "b.py"), "--root", str(tree), "--json")
    assert [m["twin_path"] for m in doc["matches"]] == ["pkg/a.py"]


def test_slop_json_on_file_and_tree(capsys, tree: Path) -> None:
    bad = tree / "bad.py"
    bad.write_text("def f(c):\n    if c:\n        return True\n    else:\n        return False\n")
    doc = run_json(capsys, "slop", str(bad), "--json")
    assert doc["files"] == 1 and doc["added_lines"] == 5
    rules = {f["rule_id"] for f in doc["reports"][0]["findings"]}
    assert {"SIM103", "RET505"} <= rules
    assert doc["score"] == pytest.approx(100 * doc["findings"] / 5, abs=0.01)
    tree_doc = run_json(capsys, "slop", str(tree), "--json")
    assert tree_doc["files"] == 3 and tree_doc["findings"] == doc["findings"]


@pytest.mark.parametrize(
    "argv",
    [["dups", "scan", "/no/such/dir", "--json"], ["dups", "check", "/no/such.py"],
     ["slop", "/no/such/path"]],
)
def test_bad_paths_exit_2_with_a_message(capsys, argv: list[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "spark: error:" in captured.err
