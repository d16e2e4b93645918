"""FileFacts packs a file's definitions into three strings and one int32 array (the scans a
map build holds: ~150 MB as Definition tuples on a real 20,000-file tree). The packing must
lose nothing, and the map built from packed scans must carry every definition as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.context import tags as tagmod
from core.context.repomap import FileFacts, RefVocab, build_graph

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)  # any unicode, "" too
_definition = st.builds(tagmod.Definition, _text, st.sampled_from(["function", "class", "method", ""]),
                        st.integers(0, 2**31 - 1), st.integers(0, 40), _text)
_files = st.dictionaries(st.from_regex(r"[a-z]{1,6}(/[a-z]{1,4})?\.py", fullmatch=True),
                         st.lists(_definition, max_size=6), max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(_definition, max_size=20))
def test_packed_definitions_unpack_as_they_were(defs: list[tagmod.Definition]) -> None:
    facts = FileFacts.pack("python", defs, np.zeros(0, dtype=np.int32))
    assert facts.defs == tuple(defs)
    assert len(facts) == len(defs)
    assert facts.name_list() == [d.name for d in defs]


@settings(max_examples=40, deadline=None)
@given(_files)
def test_the_map_of_packed_scans_holds_every_definition_in_file_order(files: dict[str, list[tagmod.Definition]]) -> None:
    vocab = RefVocab()
    scans = {rel: FileFacts.pack("python", defs, vocab.encode({d.name.encode() for d in defs if d.name.isascii()}))
             for rel, defs in files.items()}
    graph = build_graph(scans, vocab, exact=True)
    rows = [d for rel in sorted(files) for d in files[rel]]
    assert [graph.definition(k) for k in range(len(rows))] == rows
    assert graph.def_file.tolist() == [graph.file_index[rel] for rel in sorted(files) for _ in files[rel]]
    for rel, defs in files.items():
        assert graph.defs_of(rel) == tuple(defs)


def _strings(graph: object) -> list[tuple[str, list[int]]]:
    cols = [getattr(graph, a) for a in ("def_name", "def_kind", "def_text")] + [graph.ident_index.names]  # type: ignore[attr-defined]
    return [(c.data, c.offsets.tolist()) for c in cols]


def test_a_map_s_strings_survive_its_snapshot_file_the_socket_and_old_snapshots(tmp_path, monkeypatch) -> None:
    import pickle

    from core.context.repomap import PackedStrings
    from core.indexing import wire
    from core.indexing.cache import read_snapshot_file, write_snapshot_file

    defs = [tagmod.Definition("héllo_world", "function", 3, 0, "def héllo_world(x):"),
            tagmod.Definition("Thing", "class", 9, 0, "class Thing:"),
            tagmod.Definition("méthode", "method", 10, 1, "    def méthode(self) -> '\U0001f600':")]
    vocab = RefVocab()
    graph = build_graph({"a.py": FileFacts.pack("python", defs, vocab.encode({b"Thing"})),
                         "b/c.py": FileFacts.pack("python", defs[1:], vocab.encode({b"x"}))}, vocab, exact=True)
    want = _strings(graph)
    file = tmp_path / "map.snap"
    write_snapshot_file(file, "/root", "map", b"k", graph)
    found = read_snapshot_file(file, "/root", "map")
    assert found is not None, "the map's snapshot was refused"
    assert _strings(found[1]) == want
    data, raws = wire.split(graph)  # type: ignore[misc]
    assert len(data) < 2_000 and sum(r.nbytes for r in raws) > len("".join(d.text for d in defs))  # text out of band
    got = pickle.loads(data, buffers=[np.frombuffer(bytes(r), np.uint8).copy() for r in raws])
    assert _strings(got) == want
    assert _strings(pickle.loads(pickle.dumps(graph, protocol=4))) == want
    # a snapshot written before PackedStrings pickled itself (its state: the str, the offsets)
    monkeypatch.setattr(PackedStrings, "__reduce_ex__", object.__reduce_ex__)
    write_snapshot_file(file, "/root", "map", b"k", graph)
    monkeypatch.undo()
    found = read_snapshot_file(file, "/root", "map")
    assert found is not None and _strings(found[1]) == want
