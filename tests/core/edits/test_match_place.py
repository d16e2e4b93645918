"""Tolerant matches write exactly what the author meant, or are refused (issue 17).

One test per mechanism that once wrote wrong code with exit 0: a block indented one
level too deep, tabs, a SEARCH missing a blank line, ``` lines wrapped around the
parts, a wrong diff context line, a SEARCH duplicated by an earlier block.
"""

from __future__ import annotations

import pytest

from core.edits.match import MatchError
from core.edits.parser import Edit
from core.edits.place import PlaceError, fit_shift, place, strip_fences
from core.edits.proposal import FileEditor

SRC = """class Box:
    def __init__(self, size):
        self.size = size

    def area(self):
        return self.size * self.size


def main():
    print(Box(2).area())
"""


def _apply(text: str, *edits: Edit) -> str:
    ed = FileEditor("m.py", text)
    for e in edits:
        ed.apply(e)
    return ed.text()


def _sr(search: str, replace: str, kind: str = "search_replace", line: int | None = None
        ) -> Edit:
    return Edit("m.py", search, replace, kind, line)


def _deeper(block: str, by: str = "    ") -> str:
    return "".join(by + ln if ln.strip() else ln for ln in block.splitlines(True))


def test_block_one_level_too_deep_adds_a_top_level_helper_at_top_level():
    search = "    def area(self):\n        return self.size * self.size\n"
    replace = ("    def area(self):\n        return square(self.size)\n\n\n"
               "def square(x):\n    return x * x\n")
    got = _apply(SRC, _sr(_deeper(search), _deeper(replace)))
    assert got == SRC.replace(search, replace)


def test_block_too_deep_with_tabs_in_the_answer():
    search = "    def area(self):\n        return self.size * self.size\n"
    replace = "    def area(self):\n        return self.size ** 2\n"
    got = _apply(SRC, _sr(_deeper(search, "\t"), _deeper(replace, "\t")))
    assert got == SRC.replace(search, replace)


def test_replace_line_shallower_than_the_shift_allows_is_refused():
    search = "    def area(self):\n        return self.size * self.size\n"
    with pytest.raises(MatchError, match="indented"):
        # the answer is 4 spaces too deep; a REPLACE line at column 2 would need -2
        _apply(SRC, _sr(_deeper(search), _deeper(search) + "  x = 1\n"))
    assert _apply(SRC, _sr(search, search)) == SRC


def test_file_with_tabs_answer_with_spaces():
    body = "def f():\n\tif x:\n\t\treturn 1\n\treturn 0\n"
    got = _apply(body, _sr("    if x:\n        return 1\n",
                           "    if x:\n        if y:\n            return 2\n        return 1\n"))
    assert got == "def f():\n\tif x:\n\t\tif y:\n\t\t\treturn 2\n\t\treturn 1\n\treturn 0\n"


@pytest.mark.parametrize("replace_keeps_blank", [True, False])
def test_search_missing_a_blank_line(replace_keeps_blank):
    search = "        self.size = size\n    def area(self):\n"
    blank = "\n" if replace_keeps_blank else ""
    replace = f"        self.size = int(size)\n{blank}    def area(self):\n"
    got = _apply(SRC, _sr(search, replace))
    assert got == SRC.replace("self.size = size", "self.size = int(size)")


def test_search_with_blank_edges_the_file_lacks():
    search = "\n    def area(self):\n        return self.size * self.size\n\n"
    replace = "\n    def area(self):\n        return self.size ** 2\n\n"
    got = _apply(SRC, _sr(search, replace))
    assert got == SRC.replace("self.size * self.size", "self.size ** 2")


def test_insert_where_the_file_has_an_unseen_blank_line_is_refused():
    search = "        self.size = size\n    def area(self):\n"
    replace = "        self.size = size\n    x = 1\n    def area(self):\n"
    with pytest.raises(MatchError, match="cannot be told"):
        _apply(SRC, _sr(search, replace))


def test_fence_wrapped_parts_are_stripped_from_both():
    search = "```python\n    def area(self):\n        return self.size * self.size\n```\n"
    replace = "```python\n    def area(self):\n        return 0\n```\n"
    got = _apply(SRC, _sr(search, replace))
    assert got == SRC.replace("self.size * self.size", "0")
    assert "```" not in got


def test_fence_wrapped_search_only_is_refused():
    with pytest.raises(PlaceError):
        strip_fences(["```", "a", "```"], ["b"])
    search = "```\n    def area(self):\n        return self.size * self.size\n```\n"
    with pytest.raises(MatchError):
        _apply(SRC, _sr(search, "    def area(self):\n        return 0\n"))


def test_wrong_context_line_is_never_written():
    hunk_old = "    def area(self):\n        return self.size * self.size\n\n\ndef mian():\n"
    hunk_new = "    def area(self):\n        return 0\n\n\ndef mian():\n"
    got = _apply(SRC, _sr(hunk_old, hunk_new, "udiff", 5))
    assert got == SRC.replace("self.size * self.size", "0") and "mian" not in got


def test_wrong_line_that_the_edit_changes_is_refused():
    search = "    def area(self):\n        return self.size * self.sise\n"
    replace = "    def area(self):\n        return self.size * 2\n"
    with pytest.raises(MatchError):
        _apply(SRC, _sr(search + "\n\ndef main():\n", replace + "\n\ndef main():\n"))


def test_at_at_number_breaks_a_tie_between_equal_contexts():
    body = "x = 1\ny = 2\n\nx = 1\ny = 2\n"
    hunk = _sr("x = 1\ny = 2\n", "x = 1\ny = 3\n", "udiff", 4)
    assert _apply(body, hunk) == "x = 1\ny = 2\n\nx = 1\ny = 3\n"
    with pytest.raises(MatchError, match="2 places"):  # a wrong number is ignored
        _apply(body, _sr("x = 1\ny = 2\n", "x = 1\ny = 3\n", "udiff", 3))


def test_at_at_number_follows_earlier_hunks_of_the_same_file():
    body = "a\nx = 1\ny = 2\n\nx = 1\ny = 2\n"
    first = _sr("a\n", "a\nb\nc\n", "udiff", 1)
    second = _sr("x = 1\ny = 2\n", "x = 1\ny = 3\n", "udiff", 5)  # numbers of the original
    assert _apply(body, first, second) == "a\nb\nc\nx = 1\ny = 2\n\nx = 1\ny = 3\n"


def test_search_duplicated_by_an_earlier_block_finds_the_place_the_model_saw():
    body = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    first = _sr("def f():\n    return 1\n", "def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    second = _sr("def g():\n    return 2\n", "def g():\n    return 3\n")
    assert _apply(body, first, second) == (
        "def f():\n    return 1\n\n\ndef g():\n    return 2\n\n\ndef g():\n    return 3\n")


def test_search_ambiguous_in_the_original_stays_ambiguous():
    body = "x = 1\nz\nx = 1\n"
    with pytest.raises(MatchError, match="3 places"):
        _apply(body, _sr("z\n", "z\nx = 1\n"), _sr("x = 1\n", "x = 2\n"))


def test_trailing_space_noise_in_the_answer_is_not_written():
    got = _apply(SRC, _sr("    def area(self):  \n        return self.size * self.size  \n",
                          "    def area(self):  \n        return 0  \n"))
    assert got == SRC.replace("self.size * self.size", "0")


def test_file_trailing_spaces_are_kept_on_unchanged_lines():
    body = "a = 1   \nb = 2\nc = 3\n"
    assert _apply(body, _sr("a = 1\nb = 2\n", "a = 1\nb = 5\n")) == "a = 1   \nb = 5\nc = 3\n"


def test_fit_shift_kinds():
    assert fit_shift([("    ", "")])[0].apply("        ") == "    "
    assert fit_shift([("    ", "\t"), ("        ", "\t\t")])[0].kind == "to_tabs"
    assert fit_shift([("\t", "    ")])[0].apply("\t\t") == "        "
    assert fit_shift([("  ", "    "), ("    ", "    ")]) == []  # not one shift


def test_place_is_identity_when_exact():
    assert place(["a", "b"], ["a", "b"], ["c"]) == ["c"]


def test_fence_wrapped_empty_search_creates_a_file(tmp_path):
    from core.edits.proposal import apply_proposal, build_proposal
    from core.workspace.files import Workspace

    ws = Workspace(tmp_path)
    edit = Edit("new.py", "```python\n```\n", "```python\nX = 1\n```\n", "search_replace")
    prop = build_proposal(ws, [edit])
    apply_proposal(ws, prop, {h.id for h in prop.hunks}, commit=False)
    assert (tmp_path / "new.py").read_text() == "X = 1\n" and not prop.errors


def test_diff_hunk_with_a_typo_in_short_context_is_placed_at_its_at_at_number():
    body = '"""Doc."""\n\nfrom __future__ import annotations\n\nimport os\n'
    old = '"""Doc."""\n\nfrom __future__ import annotatinos\n\n'
    new = '"""Doc."""  # noqa\n\nfrom __future__ import annotatinos\n\n'
    got = _apply(body, _sr(old, new, "udiff", 1))
    assert got == body.replace('"""Doc."""', '"""Doc."""  # noqa')  # the typo never written
    with pytest.raises(MatchError):  # a number that names no such place: nothing to go by
        _apply(body, _sr(old, new, "udiff", 3))
    with pytest.raises(MatchError):  # a weak match never changes a line beside a mismatch
        _apply(body, _sr(old, '"""Doc."""\n\nfrom __future__ import annotatinos\nX = 1\n\n',
                         "udiff", 1))
