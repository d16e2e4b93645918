"""Cassette loading, closest-match selection and the tokenizer approximation."""

import json

import pytest

from core.backends.base import BackendError, BackendRequest
from core.backends.replay import CassetteLibrary, ReplayBackend
from core.backends.tokens import count_tokens, split_tokens
from tests.fakes.core import TEST_CASSETTES


def test_tokenizer_is_lossless_and_about_three_chars():
    text = (TEST_CASSETTES / "test.jsonl").read_text()
    pieces = split_tokens(text)
    assert "".join(pieces) == text
    assert 2.5 < len(text) / len(pieces) < 4.5
    assert count_tokens("") == 0


def test_closest_match_and_exact_match():
    lib = CassetteLibrary.load([TEST_CASSETTES])
    c, score = lib.match([{"role": "user", "content": "please write a CSV export for the report"}])
    assert c.id == "t-csv" and 0 < score < 1
    exact = "Add a docstring to parse_date in utils/dates.py"
    c, score = lib.match([{"role": "user", "content": exact}])
    assert c.id == "t-docstring" and score == 1.0
    # unrelated prompts still get an answer
    c, score = lib.match([{"role": "user", "content": "zzz qqq"}])
    assert c is not None and score == 0.0


def test_bad_lines_are_skipped_and_reported(tmp_path):
    good = (TEST_CASSETTES / "test.jsonl").read_text().splitlines()[0]
    (tmp_path / "x.jsonl").write_text(good + "\n{broken\n" + json.dumps({"answer": 3}) + "\n")
    lib = CassetteLibrary.load([tmp_path])
    assert len(lib.cassettes) == 1
    assert len(lib.problems) == 2 and "x.jsonl:2" in lib.problems[0]


async def test_empty_library_is_a_clear_error(tmp_path):
    backend = ReplayBackend([tmp_path])
    with pytest.raises(BackendError) as exc:
        await backend.open(BackendRequest("a", [{"role": "user", "content": "hi"}]))
    assert exc.value.code == "no_cassettes"


async def test_max_tokens_truncates_with_length():
    backend = ReplayBackend([TEST_CASSETTES])
    stream = await backend.open(BackendRequest("a", [{"role": "user", "content": "csv"}], 3))
    pieces = [p async for p in stream.pieces()]
    assert len(pieces) == 3 and stream.finish_reason == "length"
    assert stream.source["cassette"] == "test.jsonl" and stream.source["id"] == "t-csv"
