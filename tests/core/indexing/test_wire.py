"""core.indexing.wire: an object sent with its arrays out of band arrives equal, and the
messages before and after it on the same connection are untouched."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.indexing import wire


def _roundtrip(obj: object) -> tuple[object, object, object]:
    ours, theirs = multiprocessing.Pipe(duplex=True)

    def sender() -> None:
        theirs.send(("before",))
        parts = wire.split(obj)
        assert parts is not None
        data, raws = parts
        theirs.send(("sizes", [r.nbytes for r in raws]))
        wire.send_buffers(theirs, data, raws)
        theirs.send(("after",))

    thread = threading.Thread(target=sender)
    thread.start()  # buffers larger than the socket's: the reader must drain while it writes
    before = ours.recv()
    _, sizes = ours.recv()
    got = wire.recv_buffers(ours, sizes)
    after = ours.recv()
    thread.join()
    ours.close()
    theirs.close()
    return before, got, after


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 300_000), max_size=4),
       names=st.lists(st.text(max_size=12), max_size=20),
       dtype=st.sampled_from([np.int64, np.float64, np.int32, np.bool_]))
def test_arrays_and_the_rest_arrive_equal(sizes: list[int], names: list[str], dtype: type) -> None:
    rng = np.random.default_rng(len(sizes))
    arrays = [(rng.random(n) * 1000).astype(dtype) for n in sizes]
    obj = {"arrays": arrays, "names": names, "index": {n: i for i, n in enumerate(names)}}
    before, got, after = _roundtrip(obj)
    assert before == ("before",) and after == ("after",)
    assert isinstance(got, dict)
    assert got["names"] == names and got["index"] == obj["index"]
    assert len(got["arrays"]) == len(arrays)
    for a, b in zip(got["arrays"], arrays, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
        assert a.flags.writeable  # arrays of their own, like a plain unpickle's


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if hasattr(a, "__slots__") or hasattr(a, "__dict__"):
        names = getattr(a, "__slots__", None) or vars(a)
        return type(a) is type(b) and all(_same_value(getattr(a, n), getattr(b, n)) for n in names)
    return a == b


def test_a_repo_maps_graph_arrives_equal(tmp_path) -> None:
    """The indexer's real payload: a MapGraph built from a generated tree, field for field
    (graph arrays, packed strings, dicts)."""
    from bench.repo_gen import generate
    from core.context.repomap import RepoMap

    root = generate(tmp_path / "repo", 60, 5)
    repo_map = RepoMap(root)
    repo_map.all_files()
    graph = repo_map._graph_state()
    before, got, after = _roundtrip(graph)
    assert before == ("before",) and after == ("after",)
    assert _same_value(got, graph)
    assert not _same_value(got, type(graph)(**{**vars(graph), "files": [*graph.files, "x.py"]}))
