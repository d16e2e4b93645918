"""The repo map's fast ranking (RankSolver: linear pieces, GMRES, cached) against the plain
power iteration run to convergence, on real graphs: a generated repository, this
repository's own `core` package and a package from site-packages.

What is proven per focus: the ranks are within RANK_TOLERANCE (L1) of the exact ones and
within the bound the solver certifies; the map rendered from them is the exact ranks' map,
or the two orders first part at two definitions whose exact scores are within 2x that
tolerance (a near-tie the tolerance cannot order). Also: the estimator's token counts add
up across newlines, which lets render and build_request sum per-line counts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import textual
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.repo_gen import generate
from core.backends.tokens import count_tokens
from core.context import repomap
from core.context.rank import Graph, RankSolver, pagerank
from core.context.repomap import RANK_TOLERANCE, RepoMap, _best_first, prompt_names
from core.context.tokens import estimate_tokens

HERE = Path(__file__).resolve()


@pytest.fixture(scope="module")
def maps(tmp_path_factory) -> dict[str, RepoMap]:
    generated = generate(tmp_path_factory.mktemp("rank") / "repo", 120, seed=11)
    out = {}
    for label, root in (("generated", generated), ("this repository", HERE.parents[3] / "core"),
                        ("site-packages", Path(textual.__file__).parent / "widgets")):
        m = RepoMap(root)
        m.refresh()
        assert len(m.source_files()) > 40, label
        out[label] = m
    return out


def _exact(m: RepoMap, chat: list[str], files: list[str], names: set[str]) -> np.ndarray:
    state = m._graph_state()
    chat_nodes = [state.file_index[r] for r in set(chat) if r in state.file_index]
    personal = RepoMap._personalisation(state, chat_nodes, files, names)
    return pagerank(state.graph, personal, tol=1e-13, max_iter=5000)


FOCUS = st.tuples(st.sampled_from(["generated", "this repository", "site-packages"]),
                  st.lists(st.integers(0, 10_000), max_size=2),   # chat files
                  st.lists(st.integers(0, 10_000), max_size=2),   # mentioned files
                  st.lists(st.integers(0, 10_000), max_size=4))   # mentioned names


def _focus(m: RepoMap, picks: tuple) -> tuple[list[str], list[str], set[str]]:
    _, chat, files, names = picks
    state = m._graph_state()
    idents = sorted(state.ident_index)
    return ([state.files[i % len(state.files)] for i in chat],
            [state.files[i % len(state.files)] for i in files],
            {idents[i % len(idents)] for i in names})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(FOCUS)
def test_ranks_are_within_the_tolerance_of_the_exact_pagerank(maps, picks):
    m = maps[picks[0]]
    chat, files, names = _focus(m, picks)
    m._rank_cache.clear()
    _state, _chat, fast = m._focus_ranks(chat, files, names)
    exact = _exact(m, chat, files, names)
    assert abs(fast.sum() - 1.0) < 1e-9
    assert np.abs(fast - exact).sum() <= RANK_TOLERANCE


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=FOCUS)
def test_the_map_is_the_exact_ranks_map_but_for_near_ties(maps, monkeypatch_module, picks):
    m = maps[picks[0]]
    chat, files, names = _focus(m, picks)
    prompt = " ".join(sorted(names))
    m._rank_cache.clear()
    fast_map = m.render(1500, chat_files=chat, prompt=prompt, mentioned_files=files)
    _, fast_scores = m._scores(chat, files, prompt_names(prompt))
    exact = _exact(m, chat, files, prompt_names(prompt))
    with monkeypatch_module.context() as patch:
        patch.setattr(repomap, "rank_focus", lambda solver, parts: exact)
        m._rank_cache.clear()
        exact_map = m.render(1500, chat_files=chat, prompt=prompt, mentioned_files=files)
        _, exact_scores = m._scores(chat, files, prompt_names(prompt))
    m._rank_cache.clear()
    if fast_map.text == exact_map.text:
        return
    fast_order = [k for k, _ in _best_first(fast_scores)]
    exact_order = [k for k, _ in _best_first(exact_scores)]
    first = next(i for i, (a, b) in enumerate(zip(fast_order, exact_order)) if a != b)
    a, b = fast_order[first], exact_order[first]
    assert abs(exact_scores[a] - exact_scores[b]) <= 2 * RANK_TOLERANCE


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["generated", "this repository", "site-packages"]), st.integers(0, 10_000),
       st.floats(1e-9, 1e-3))
def test_the_bipartite_reduction_and_the_full_solve_agree_within_their_bounds(maps, label, node, tol):
    state = maps[label]._graph_state()
    b = np.zeros(state.graph.size)
    b[node % state.graph.size] = 1.0
    reduced = RankSolver(state.graph, split=len(state.files))
    full = RankSolver(state.graph)
    assert reduced._sides is not None and full._sides is None
    y_reduced, y_full = reduced.solve(b, tol), full.solve(b, tol)
    assert y_reduced.bound <= tol and y_full.bound <= tol
    exact = full.solve(b, 1e-12).y
    assert np.abs(y_reduced.y - exact).sum() <= y_reduced.bound + 1e-12
    assert np.abs(y_full.y - exact).sum() <= y_full.bound + 1e-12


EDGES = st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29), st.floats(0.1, 5.0)), min_size=1, max_size=120)


@settings(max_examples=60, deadline=None)
@given(EDGES, st.lists(st.integers(0, 29), min_size=1, max_size=4), st.floats(1e-8, 1e-4))
def test_any_graph_with_dangling_nodes_is_ranked_within_the_certified_bound(edges, focus, tol):
    """Not the map's bipartite shape: cycles, self-loops, nodes without out-edges."""
    src, dst, weight = zip(*edges)
    graph = Graph.from_edges(30, list(src), list(dst), list(weight))
    personal = np.zeros(30)
    personal[focus] += 1.0
    personal = 0.8 * personal / personal.sum() + 0.2 / 30
    from core.context.rank import Part

    parts = [Part(float(w), ("node", i), _unit(30, i)) for i, w in enumerate(personal) if w > 0]
    ranks, bound = RankSolver(graph, split=15).ranks(parts, tol)
    exact = pagerank(graph, personal, tol=1e-14, max_iter=10_000)
    assert bound <= tol
    assert np.abs(ranks - exact).sum() <= bound + 1e-12


def _unit(size: int, node: int):
    def make() -> np.ndarray:
        vec = np.zeros(size)
        vec[node] = 1.0
        return vec
    return make


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=6), st.text(max_size=40))
def test_token_counts_add_up_across_newlines(lines, last):
    """render and build_request sum per-line counts instead of counting the map again."""
    pieces = [line + "\n" for line in lines] + [last]
    assert count_tokens("".join(pieces)) == sum(count_tokens(p) for p in pieces)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(FOCUS, st.integers(60, 3000))
def test_a_rendered_map_reports_the_tokens_of_its_text(maps, picks, budget):
    m = maps[picks[0]]
    chat, files, names = _focus(m, picks)
    result = m.render(budget, chat_files=chat, prompt=" ".join(sorted(names)), mentioned_files=files)
    assert result.tokens == estimate_tokens(result.text) <= budget


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30_000), st.integers(1, 8), st.integers(1, 5), st.floats(0.0, 0.9), st.integers(0, 2**32 - 1))
def test_best_first_is_the_stable_descending_order(n, power, digits, zeros, seed):
    """The chunked order (sampled cuts) equals one stable sort, ties and zeros included."""
    rng = np.random.default_rng(seed)
    score = np.round(rng.random(n) ** power, digits)
    score[rng.random(n) < zeros] = 0.0
    assert [k for k, _ in _best_first(score)] == np.argsort(-score, kind="stable").tolist()


def test_the_warm_up_solves_the_pieces_every_focused_prompt_reuses(maps):
    """After prefetch() with no prompt (the indexer's call on a fresh graph) a prompt
    naming one new function solves that function's piece only."""
    m = maps["generated"]
    m._solver = None
    m._rank_cache.clear()
    m.prefetch()
    solver = m._solver
    assert solver is not None and solver.cached(("files",)) is not None and solver.cached(("all",)) is not None
    state = m._graph_state()
    name = sorted(state.ident_index)[7]
    solved = []
    real = solver.solve
    solver.solve = lambda b, tol, start=None: solved.append(1) or real(b, tol, start)
    m.render(2000, prompt=f"look at {name}")
    assert len(solved) == 1
