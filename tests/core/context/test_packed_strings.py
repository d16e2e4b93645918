"""PackedStrings held in blocks (a map's string columns, so that a map edit copies one
block): any run of splices reads back as the list it models, item for item and as one
text, and survives the pickles the map goes through (snapshot file, socket, protocol 4)."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.context.repomap import PackedStrings
from core.indexing import cache, wire

WORDS = st.text(alphabet=st.sampled_from(["a", "b", "é", "\U0001f600", "_", " "]), max_size=4)
SPLICES = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 4), st.lists(WORDS, max_size=5)), max_size=12)


def _check(packed: PackedStrings, model: list[str]) -> None:
    assert len(packed) == len(model)
    assert [packed[k] for k in range(len(model))] == model
    assert packed.data == "".join(model)
    assert packed.offsets.dtype == np.int64 and packed.offsets.tolist() == np.cumsum([0, *map(len, model)]).tolist()


@settings(max_examples=60, deadline=None)
@given(items=st.lists(WORDS, max_size=40), rows=st.integers(1, 6), splices=SPLICES)
def test_splices_of_a_blocked_column_read_back_as_the_list(items, rows, splices):
    packed = PackedStrings(items).blocked(rows)
    model = list(items)
    _check(packed, model)
    if len(items) > rows:
        assert packed.blocks > 1
    for at, width, new in splices:
        a = at % (len(model) + 1)
        b = min(len(model), a + width)
        old, old_model = packed, list(model)
        packed = packed.spliced(a, b, new)
        model[a:b] = new
        _check(packed, model)
        _check(old, old_model)  # left as it was (a map being ranked may still read it)
    for proto in (4, 5):
        _check(pickle.loads(pickle.dumps(packed, protocol=proto)), model)
    parts = wire.split(packed)
    assert parts is not None
    data, raws = parts
    _check(pickle.loads(data, buffers=[np.frombuffer(bytes(r), np.uint8).copy() for r in raws]), model)
    _check(cache.loads(cache.dumps(packed)), model)  # (the cache's allow-listed unpickler)


def test_a_splice_copies_one_block_not_the_column():
    items = [f"def f{k}(x):" for k in range(10_000)]
    packed = PackedStrings(items).blocked(1000)
    out = packed.spliced(5000, 5001, ["def g(y):", "def h(z):"])
    same = sum(x is y for x, y in zip(packed._blocks, out._blocks))
    assert packed.blocks == out.blocks == 10 and same == 9
    assert out[5000] == "def g(y):" and out[5001] == "def h(z):" and out[5002] == items[5001]


def test_a_map_with_blocked_columns_survives_its_snapshot_file(tmp_path, monkeypatch):
    """The map's snapshot (the indexer stores it; the app and a second launch read it, with
    and without copies of its buffers) gives back every column's items and blocks."""
    from core.context import repomap
    from core.context import tags as tagmod
    from core.indexing.cache import read_snapshot_file, write_snapshot_file

    monkeypatch.setattr(repomap, "PACKED_BLOCK_ROWS", 3)
    vocab = repomap.RefVocab()
    scans = {f"m{k}.py": repomap.FileFacts.pack(
        "python", [tagmod.Definition(f"fé_{k}_{j}", "function", j + 1, 0, f"def fé_{k}_{j}():") for j in range(4)],
        vocab.encode({b"x"})) for k in range(5)}
    graph = repomap.build_graph(scans, vocab, exact=True)
    assert graph.def_text.blocks > 1
    file = tmp_path / "map.snap"
    write_snapshot_file(file, "/root", "map", b"k", graph)
    for copy in (False, True):
        found = read_snapshot_file(file, "/root", "map", copy=copy)
        assert found is not None
        got = found[1]
        for col in ("def_name", "def_kind", "def_text"):
            want = getattr(graph, col)
            _check(getattr(got, col), [want[k] for k in range(len(want))])
            assert getattr(got, col).blocks == want.blocks
