"""Matching SEARCH text: exact, whitespace, indentation, fuzzy; clear errors otherwise."""

from __future__ import annotations

import pytest

from core.edits.match import MatchError, find
from core.edits.place import place

FILE = """import os


def load(path):
    with open(path) as fh:
        return fh.read()


def save(path, text):
    with open(path, "w") as fh:
        fh.write(text)
""".splitlines()


def test_exact():
    m = find(FILE, ["def save(path, text):"])
    assert (m.start, m.end, m.how) == (8, 9, "exact")


def test_trailing_whitespace_tolerated():
    m = find(FILE, ["def load(path):   ", "    with open(path) as fh:"])
    assert (m.start, m.how) == (3, "loose")


def test_indentation_tolerated_and_replacement_reindented():
    search = ["with open(path) as fh:", "    return fh.read()"]
    m = find(FILE, search)
    assert (m.start, m.end, m.how) == (4, 6, "loose")
    assert place(FILE[m.start:m.end], search,
                 ["with open(path, 'rb') as fh:", "    return fh.read()"]) == [
        "    with open(path, 'rb') as fh:", "        return fh.read()"]


def test_fuzzy_above_threshold():
    search = ["def save(path, txt):", "    with open(path, 'w') as fh:", "        fh.write(text)"]
    m = find(FILE, search)
    assert m.how == "fuzzy" and (m.start, m.end) == (8, 11) and m.score >= 0.88


def test_not_found_names_file_and_shows_closest_lines():
    with pytest.raises(MatchError) as exc:
        find(FILE, ["def save(p, data, mode):", "    pass"], path="io.py")
    msg = str(exc.value)
    assert msg.startswith("io.py: SEARCH text not found")
    assert "def save(path, text):" in msg and "9 |" in msg


def test_several_matches_is_an_error():
    dup = FILE + ["    with open(path) as fh:"]
    with pytest.raises(MatchError) as exc:
        find(dup, ["    with open(path) as fh:"], path="io.py")
    assert "matches 2 places" in str(exc.value) and "lines 5, 12" in str(exc.value)


def test_blank_edges_of_search_are_ignored_when_needed():
    m = find(FILE, ["", "def save(path, text):", ""])
    assert (m.start, m.end) == (7, 9)  # widened over the file's blank line before


@pytest.mark.timeout(30)  # was 18 s when every window was scored (speed: bench_edit_engine)
def test_fuzzy_on_a_big_file_finds_the_place():
    import random

    rng = random.Random(0)
    big = [f"    value_{i} = compute({rng.randint(0, 999)}, {i})" for i in range(20000)]
    search = [big[77].replace("value", "valeu"), big[78].replace("compute", "cmpute"),
              big[79]]
    m = find(big, search, path="big.py")
    assert (m.start, m.end, m.how) == (77, 80, "fuzzy")
