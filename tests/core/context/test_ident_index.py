"""IdentIndex (the map's name -> ident node lookup, a packed string searched by bisection)
answers exactly as the dict it replaced, and survives the snapshot's safe unpickler."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.repo_gen import generate
from core.context.repomap import IdentIndex, PackedStrings, RepoMap
from core.indexing.cache import _SafeUnpickler

NAMES = st.text(alphabet=st.sampled_from("aAbz_0é中\U0001f600"), max_size=6)


@settings(max_examples=150, deadline=None)
@given(names=st.sets(NAMES, max_size=40), probes=st.lists(NAMES, max_size=20), base=st.integers(0, 500))
def test_answers_as_the_dict(names: set[str], probes: list[str], base: int) -> None:
    as_dict = {name: base + k for k, name in enumerate(sorted(names))}
    index = IdentIndex(PackedStrings(sorted(names)), base)
    assert len(index) == len(as_dict) and list(index) == list(as_dict)
    assert dict(index.items()) == as_dict
    for probe in [*probes, *names]:
        assert (probe in index) == (probe in as_dict)
        assert index.get(probe) == as_dict.get(probe)
    assert 3 not in index and None not in index
    again = pickle.loads(pickle.dumps(index, protocol=5))
    assert dict(again.items()) == as_dict


def test_a_maps_index_round_trips_through_the_safe_unpickler(tmp_path):
    import io

    root = generate(tmp_path / "repo", 40, 3)
    repo_map = RepoMap(root)
    repo_map.all_files()
    state = repo_map._graph_state()
    assert isinstance(state.ident_index, IdentIndex) and len(state.ident_index) > 20
    got = _SafeUnpickler(io.BytesIO(pickle.dumps(state, protocol=5))).load()
    assert dict(got.ident_index.items()) == dict(state.ident_index.items())
    names = list(state.ident_index)
    assert names == sorted(names)
    assert all(got.ident_index[n] == len(state.files) + k for k, n in enumerate(names))
