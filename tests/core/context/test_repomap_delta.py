"""A saved file's scan spliced into the built map (core.context.repomap_delta) equals a full
rebuild of the resulting tree, array for array, over random edits of real modules: bodies
edited (lines shifted, references added or dropped), defs renamed, added or removed, files
deleted or added. Where the update declines (the graph's nodes change), the caller rebuilds:
the property checks it declines only then, and that body edits are spliced."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.context import tags as tagmod
from core.context.repomap import (
    FileFacts,
    IdentIndex,
    MapGraph,
    PackedStrings,
    RefVocab,
    _mappable_name,
    build_graph,
)
from core.context.repomap_delta import update_graph
from core.indexing.worker import _exact_tags
from tests.core.detectors.real_code import read_text, sample_modules

MODULES = sample_modules()[:10]
_DEF = re.compile(r"^([ \t]*)(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


class _Conn:
    """The indexer's socket kept in memory: what it sent; never anything to read."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, msg: tuple) -> None:
        self.sent.append(msg)

    def send_bytes(self, data: bytes) -> None:
        self.sent.append(("bytes",))

    def poll(self, timeout: float = 0) -> bool:
        return False


def _fresh_graph(root, build) -> MapGraph:
    """A full build of the tree as it is now, by a new indexer without a cache (`build`: the
    real build_graph, taken before a test counts its calls)."""
    from core.indexing import worker
    from core.indexing.treestate import tree_state

    other = worker.Indexer(root, _Conn(), tree_state(root), use_cache=False)  # type: ignore[arg-type]
    other.await_cache()
    other.stamps = worker.map_stamps(root, other.files)
    other._scan_all_tags(partial=False)
    return build(other.facts, other._vocab(), exact=True)


def _holds_fresh_map(repo_map, root, build, timeout: float = 60) -> bool:
    """Whether the app's map comes to equal a fresh build of the tree as it is now (edges
    compared as sets: see _same_edges_any_order) within `timeout` seconds."""
    import time

    want = _fresh_graph(root, build)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if repo_map._graph is not None and _same_edges_any_order(repo_map._graph, want):
            return True
        time.sleep(0.05)
    return False


def _same(a: MapGraph, b: MapGraph) -> bool:
    """Every field equal, arrays by value and dtype, packed strings by text and offsets."""
    def eq(x: object, y: object) -> bool:
        if isinstance(x, np.ndarray):
            return isinstance(y, np.ndarray) and x.dtype == y.dtype and np.array_equal(x, y)
        if isinstance(x, PackedStrings):
            return isinstance(y, PackedStrings) and x.data == y.data and eq(x.offsets, y.offsets)
        if isinstance(x, IdentIndex):
            return isinstance(y, IdentIndex) and x.base == y.base and eq(x.names, y.names)
        return bool(x == y)

    ga, gb = a.graph, b.graph
    return ga.size == gb.size and all(eq(getattr(ga, f), getattr(gb, f))
                                      for f in ("src", "dst", "weight", "dangling", "degree")) and \
        all(eq(getattr(a, f), getattr(b, f)) for f in MapGraph.__dataclass_fields__ if f not in ("graph", "serial"))


def _same_edges_any_order(a: MapGraph, b: MapGraph) -> bool:
    """`_same`, but each file's out-edges compared as a set: a file's references are a
    frozenset, whose order (so the order of its edges) depends on how it was made (read
    back from the cache or scanned); the ranks do not (the weights are the same)."""
    def canon(g: MapGraph) -> MapGraph:
        order = np.lexsort((g.graph.dst, g.graph.src))
        graph = dataclasses.replace(g.graph, dst=g.graph.dst[order], weight=g.graph.weight[order])
        return dataclasses.replace(g, graph=graph)

    return _same(canon(a), canon(b))


def _facts(rel: str, text: str, vocab: RefVocab) -> FileFacts | None:
    lang = tagmod.language_for(rel)
    assert lang is not None
    try:
        return FileFacts.of(_exact_tags(lang, text.encode("utf-8")), vocab)
    except Exception:  # noqa: BLE001 -- as the indexer: a file that does not scan is not mapped
        return None


def _edit(texts: dict[str, str], kind: str, pick: int, words: list[str]) -> str:
    """Apply one edit to `texts` in place; the edited file's path."""
    names = sorted(texts)
    rel = names[pick % len(names)]
    text = texts[rel]
    lines = text.split("\n")
    at = pick % (len(lines) + 1)
    defs = list(_DEF.finditer(text))
    if kind == "body":  # a statement (and a line shift) inside the file
        lines.insert(at, "    pass  # edited")
        texts[rel] = "\n".join(lines)
    elif kind == "blank":
        lines.insert(at, "")
        texts[rel] = "\n".join(lines)
    elif kind == "add_ref":  # a reference to a name some file defines (or not)
        texts[rel] = text + f"\n_ = {words[pick % len(words)]}\n"
    elif kind == "drop_ref" and words:  # every mention of one word gone
        texts[rel] = re.sub(rf"\b{re.escape(words[pick % len(words)])}\b", "zz_gone", text)
    elif kind == "rename_def" and defs:
        m = defs[pick % len(defs)]
        texts[rel] = text[:m.start(3)] + m.group(3) + "_renamed" + text[m.end(3):]
    elif kind == "add_def":  # a top-level def: a name defined elsewhere, or a new one
        name = words[pick % len(words)] if pick % 2 else f"fresh_{pick}"
        texts[rel] = text + f"\n\ndef {name}(x):\n    return x\n"
    elif kind == "dup_def" and defs:  # one more def of a name the file defines already
        texts[rel] = text + f"\n\ndef {defs[pick % len(defs)].group(3)}(y):\n    return y\n"
    elif kind == "remove_def" and defs:
        m = defs[pick % len(defs)]
        texts[rel] = text[:m.start()] + m.group(1) + "zz_removed = 1" + text[text.index("\n", m.end()):] \
            if "\n" in text[m.end():] else text[:m.start()]
    elif kind == "delete":
        if len(texts) > 1:
            del texts[rel]
    elif kind == "add_file":
        texts[f"added_{pick}/{rel.rsplit('/', 1)[-1]}"] = text
    elif kind == "def_used":  # a def of a name other files mention that none defined
        other = texts[names[(pick + 1) % len(names)]]
        defined = {m.group(3) for t in texts.values() for m in _DEF.finditer(t)}
        used = sorted(set(re.findall(r"\b[a-z_][a-z0-9_]{3,}\b", other)) - defined)
        if used:
            texts[rel] = text + f"\n\ndef {used[pick % len(used)]}(z):\n    return z\n"
    elif kind == "new_module":  # a new file defining a fresh name and one defined elsewhere
        word = words[pick % len(words)]
        more = "".join(f"\n\ndef fresh_{pick}_{j}(y):\n    return y\n" for j in range(10 if pick % 3 == 0 else 0))
        texts[f"new_{pick}.py"] = f"def fresh_mod_{pick}(x):\n    return {word}(x)\n\n\nclass {word}:\n    pass\n" + more
    return rel


EDITS = st.lists(st.tuples(
    st.sampled_from(["body", "body", "blank", "add_ref", "drop_ref", "rename_def", "add_def", "dup_def",
                     "remove_def", "delete", "add_file", "new_module", "def_used"]),
    st.integers(0, 10_000)), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(edits=EDITS, size=st.integers(3, len(MODULES)))
def test_an_update_equals_a_full_rebuild(edits, size):
    texts = {f"pkg{k}/{p.name}": read_text(p) for k, p in enumerate(MODULES[:size])}
    vocab = RefVocab()
    scans = {rel: f for rel, t in texts.items() if (f := _facts(rel, t, vocab)) is not None}
    graph = build_graph(scans, vocab, exact=True)
    words = sorted({m.group(3) for t in texts.values() for m in _DEF.finditer(t)})
    for kind, pick in edits:
        before = dict(texts)
        rel = _edit(texts, kind, pick, words)
        changed = {r for r in set(before) | set(texts) if before.get(r) != texts.get(r)}
        for r in changed:
            facts = _facts(r, texts[r], vocab) if r in texts else None
            old = scans.get(r)
            if facts is None:
                scans.pop(r, None)
            else:
                scans[r] = facts
            updated = update_graph(graph, r, facts, vocab)
            full = build_graph(scans, vocab, exact=True)
            if updated is not None:
                assert _same(updated, full), (kind, r)
            else:  # declined: only where a file came or went or defines other mapped names
                assert old is None or facts is None or _names(old) != _names(facts), (kind, r)
            graph = full
        assert rel in texts or kind == "delete"


@settings(max_examples=40, deadline=None)
@given(edits=EDITS, size=st.integers(3, len(MODULES)))
@example(edits=[("new_module", 3), ("remove_def", 5), ("new_module", 4)], size=3)  # (12 names at once: > 8)
def test_every_update_with_the_scans_equals_a_full_rebuild(edits, size):
    """With every file's scan at hand (MapIndex) no update declines: a def renamed, added
    or removed, a file added or deleted is an edit (MapEdit) whose map equals a full build
    of the new scans array for array, and each map is made from the previous updated one
    (not from a fresh build), so an error would carry on and be caught later too."""
    from core.context import repomap
    from core.context.repomap_delta import MapIndex

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(repomap, "PACKED_BLOCK_ROWS", 16)  # string columns in many blocks (4096 on big trees)
        _updates_equal_rebuilds(edits, size, MapIndex)


def _updates_equal_rebuilds(edits, size, index_class) -> None:
    texts = {f"pkg{k}/{p.name}": read_text(p) for k, p in enumerate(MODULES[:size])}
    vocab = RefVocab()
    scans = {rel: f for rel, t in texts.items() if (f := _facts(rel, t, vocab)) is not None}
    graph = build_graph(scans, vocab, exact=True)
    assert graph.def_text.blocks > 1
    index = index_class(vocab, scans)
    words = sorted({m.group(3) for t in texts.values() for m in _DEF.finditer(t)})
    for kind, pick in edits:
        before = dict(texts)
        _edit(texts, kind, pick, words)
        for r in sorted(r for r in set(before) | set(texts) if before.get(r) != texts.get(r)):
            facts = _facts(r, texts[r], vocab) if r in texts else None
            if facts is None:
                scans.pop(r, None)
            else:
                scans[r] = facts
            updated = update_graph(graph, r, facts, vocab, index)
            if updated is None:  # only a file that was not mapped and still is not
                assert r not in graph.file_index and facts is None, (kind, r)
                continue
            assert _same(updated, build_graph(scans, vocab, exact=True)), (kind, r)
            graph = updated


def _names(facts: FileFacts) -> set[str]:
    return {d.name for d in facts.defs if _mappable_name(d.name)}


def test_a_body_edit_is_spliced_not_rebuilt():
    texts = {f"m{k}/{p.name}": read_text(p) for k, p in enumerate(MODULES[:6])}
    vocab = RefVocab()
    scans = {rel: f for rel, t in texts.items() if (f := _facts(rel, t, vocab)) is not None}
    graph = build_graph(scans, vocab, exact=True)
    rel = sorted(scans)[2]
    edited = "# a comment\n\n" + texts[rel] + "\nprint(len(texts))\n"
    scans[rel] = facts = _facts(rel, edited, vocab)
    updated = update_graph(graph, rel, facts, vocab)
    assert updated is not None and _same(updated, build_graph(scans, vocab, exact=True))
    assert updated.exact and not _same(updated, graph)  # lines moved: rows differ from the old map
    i = graph.file_index[rel]
    assert updated.def_line[int(updated.file_starts[i])] == graph.def_line[int(graph.file_starts[i])] + 2


def test_a_new_name_or_a_gone_file_is_declined():
    texts = {f"m{k}/{p.name}": read_text(p) for k, p in enumerate(MODULES[:4])}
    vocab = RefVocab()
    scans = {rel: f for rel, t in texts.items() if (f := _facts(rel, t, vocab)) is not None}
    graph = build_graph(scans, vocab, exact=True)
    rel = min(scans)
    assert update_graph(graph, rel, None, vocab) is None
    assert update_graph(graph, "new/file.py", scans[rel], vocab) is None
    assert update_graph(graph, rel, _facts(rel, texts[rel] + "\ndef zz_brand_new():\n    pass\n", vocab),
                        vocab) is None


def test_the_indexer_sends_deltas_for_bodies_new_names_and_files(tmp_path, monkeypatch):
    """Through the indexer child's `on_events`: saved bodies, a new def, a renamed def, a
    new file and a deleted one cost no `build_graph`, each goes to the app as deltas
    (MapDelta for a body, MapEdit for the rest), and the map it holds equals a fresh build
    of the tree after each; more edits in one batch than MAX_EDITS_PER_BATCH: one build."""
    from bench.repo_gen import generate
    from core.context import repomap
    from core.context.repomap_delta import MapDelta, MapEdit, MapIndex
    from core.indexing import worker
    from core.indexing.treestate import tree_state

    root = generate(tmp_path / "repo", 20, 1)
    conn = _Conn()
    sent = conn.sent
    ix = worker.Indexer(root, conn, tree_state(root), use_cache=False)  # type: ignore[arg-type]
    ix.await_cache()
    ix.build_map()
    builds: list[int] = []
    real_build = repomap.build_graph
    monkeypatch.setattr(repomap, "build_graph", lambda *a, **k: builds.append(1) or real_build(*a, **k))

    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    for rel in files[:2]:  # lines shifted, a reference added
        (root / rel).write_text("# edited\n\n" + (root / rel).read_text() + "\nprint(len(files))\n")
    sent.clear()
    ix.handle(("events", [(files[0], "modified"), (files[1], "modified")]))
    assert not builds and [m[0] for m in sent if m[0].startswith("map")] == ["map_delta"]
    assert ix._graph is not None and _same(ix._graph, _fresh_graph(root, real_build))
    assert all(type(d) is MapDelta for m in sent if m[0] == "map_delta" for d in m[1])

    def save(*changes: tuple[str, str | None]) -> list:
        sent.clear()
        for rel, text in changes:
            if text is None:
                (root / rel).unlink()
            else:
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
        ix.handle(("events", [(rel, "deleted" if text is None else "modified") for rel, text in changes]))
        assert ix._graph is not None and _same(ix._graph, _fresh_graph(root, real_build))
        assert [m[0] for m in sent if m[0].startswith("map")] == ["map_delta"]
        return [d for m in sent if m[0] == "map_delta" for d in m[1]]

    text2 = (root / files[2]).read_text()
    new = save((files[2], text2 + "\n\ndef zz_new_name(x):\n    return x\n"))
    assert [type(d) for d in new] == [MapEdit] and new[0].added == ("zz_new_name",)
    renamed = save((files[2], text2 + "\n\ndef zz_other_name(x):\n    return x\n"))
    assert renamed[0].added == ("zz_other_name",) and renamed[0].removed == ("zz_new_name",)
    assert [d.op for d in save(("zz_pkg/zz_mod.py", text2 + "\n\nclass ZzBrandNew:\n    pass\n"))] == ["add"]
    assert [d.op for d in save((files[3], None))] == ["remove"]
    assert not builds
    monkeypatch.setattr(worker, "MAX_EDITS_PER_BATCH", 1)
    updates: list[int] = []
    real_update = MapIndex.update
    monkeypatch.setattr(MapIndex, "update", lambda *a, **k: updates.append(1) or real_update(*a, **k))
    sent.clear()
    for k in (5, 6):
        (root / files[k]).write_text((root / files[k]).read_text() + f"\n\ndef zz_batch_{k}(x):\n    return x\n")
    ix.handle(("events", [(files[5], "modified"), (files[6], "modified")]))
    assert builds == [1] and [m[0] for m in sent if m[0].startswith("map")] == ["map"]
    assert not updates  # (told before any edit is made)
    assert ix._graph is not None and _same(ix._graph, _fresh_graph(root, real_build))


@pytest.mark.parametrize("in_process", [True, False], ids=["thread", "child"])
def test_the_app_splices_the_indexers_delta_and_asks_again_on_another_map(tmp_path, monkeypatch, in_process):
    """End to end (IndexService, indexer in a thread or a child): a saved body reaches the app as a
    delta (no build, no whole map) and the map it then holds equals a fresh build; a delta
    made for another map than the one held is refused and the whole map is sent instead."""
    import time

    from bench.repo_gen import generate
    from core.context import repomap
    from core.indexing.cache import cache_file
    from core.indexing.service import IndexService

    root = generate(tmp_path / "repo", 20, 1)
    repo_map = repomap.RepoMap(root)
    svc = IndexService(root, repo_map, cache_path=cache_file(root, tmp_path / "cache"), in_process=in_process).start()
    applied: list[bool] = []
    real_build = repomap.build_graph
    real_apply = repomap.RepoMap.apply_deltas

    def spy(self, deltas, progress):
        applied.append(real_apply(self, deltas, progress))
        return applied[-1]

    monkeypatch.setattr(repomap.RepoMap, "apply_deltas", spy)

    def save_and_wait(rel: str, n: int) -> bool:
        """Save a body edit; True once the app holds the map of the tree as it is now."""
        (root / rel).write_text(f"# edit {n}\n" + (root / rel).read_text() + f"\nprint(len(files), {n})\n")
        repo_map.on_file_event(rel)
        return _holds_fresh_map(repo_map, root, real_build)

    try:
        assert svc.wait(120), svc.snapshot()
        assert svc.snapshot().mode == ("thread" if in_process else "process")
        rel = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))[3]
        assert save_and_wait(rel, 0)  # the first event after the launch: scans loaded, a whole map
        time.sleep(0.3)
        builds: list[int] = []  # (counted in this process: the thread's builds)
        monkeypatch.setattr(repomap, "build_graph", lambda *a, **k: builds.append(1) or real_build(*a, **k))
        applied.clear()
        assert save_and_wait(rel, 1)
        assert applied == [True] and not builds
        assert repo_map._graph is not None
        repo_map._graph.serial = 12345  # the app holds another map than the indexer's last
        assert save_and_wait(rel, 2)  # refused, then the whole map is resent
        assert applied == [True, False] and not builds
        assert save_and_wait(rel, 3)  # and deltas fit again
        assert applied == [True, False, True] and not builds
        # a new def, a new file, a deleted file: map edits, applied by the app (no whole map)
        (root / rel).write_text((root / rel).read_text() + "\n\ndef zz_new_name(x):\n    return x\n")
        repo_map.on_file_event(rel)
        assert _holds_fresh_map(repo_map, root, real_build)
        (root / "zz_new.py").write_text("def zz_newer(x):\n    return zz_new_name(x)\n")
        repo_map.on_file_event("zz_new.py")
        assert _holds_fresh_map(repo_map, root, real_build)
        (root / rel).unlink()
        repo_map.on_file_event(rel)
        assert _holds_fresh_map(repo_map, root, real_build)
        assert applied == [True, False, True, True, True, True] and not builds
    finally:
        svc.stop()


def test_a_snapshot_after_deltas_waits_longer_than_after_a_rebuild(tmp_path, monkeypatch):
    """The map snapshot (the whole map: 116 MB on a real 20k tree) is stored 2 s after a
    rebuilt map but only after a long quiet spell when deltas alone changed it; stopping
    the indexer stores it at once, and the stored map is the spliced one."""
    import time

    from bench.repo_gen import generate
    from core.indexing import worker
    from core.indexing.cache import cache_file
    from core.indexing.treestate import tree_state

    root = generate(tmp_path / "repo", 12, 1)

    ix = worker.Indexer(root, _Conn(), tree_state(root), cache_path=cache_file(root, tmp_path / "cache"))  # type: ignore[arg-type]
    ix.await_cache()
    ix.build_map()
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    (root / files[1]).write_text((root / files[1]).read_text() + "\n\ndef zz_new_name(x):\n    return x\n")
    monkeypatch.setattr(worker, "MAX_EDITS_PER_BATCH", 0)  # (a new name is an edit, not a build)
    ix.handle(("events", [(files[1], "modified")]))  # rebuilt
    assert ix.snapshot_due is not None and ix.snapshot_due - time.monotonic() <= worker.SNAPSHOT_AFTER_S
    ix.store_map_snapshot()
    assert not ix.rebuilt_unstored
    (root / files[2]).write_text("# edited\n" + (root / files[2]).read_text())
    ix.handle(("events", [(files[2], "modified")]))  # a body: a delta
    assert ix.snapshot_due is not None and ix.snapshot_due - time.monotonic() > worker.SNAPSHOT_AFTER_S * 5
    ix.store_map_snapshot()  # as `run` does when it ends
    assert ix.cache is not None
    stored = ix.cache.snapshot("map", tree_state(root).key)
    assert isinstance(stored, MapGraph) and ix._graph is not None and _same(stored, ix._graph)
    assert stored.serial == ix._graph.serial


def test_the_first_save_after_a_launch_from_the_snapshot_loads_no_scans(tmp_path, monkeypatch):
    """Second launch (the map from its snapshot): the first saved body is a delta too,
    with no scans loaded and no build; a file changed before it without an event (lost) is
    rescanned and spliced with it; the app's map then equals a fresh build. A new name
    afterwards is an edit of the map with still no scans loaded: the files that mention it
    (one not touched since the first launch) are found in the cache, and their rows redone."""

    from bench.repo_gen import generate
    from core.context import repomap
    from core.indexing import worker
    from core.indexing.cache import cache_file
    from core.indexing.service import IndexService

    root = generate(tmp_path / "repo", 20, 1)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    (root / files[8]).write_text((root / files[8]).read_text() + "\nprint(zz_used_later(1))\n")
    cache = cache_file(root, tmp_path / "cache")
    first = IndexService(root, repomap.RepoMap(root), cache_path=cache).start()
    assert first.wait(120)
    first.stop()
    real_build = repomap.build_graph
    loads: list[int] = []
    builds: list[int] = []
    monkeypatch.setattr(repomap, "build_graph", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    real_load = worker.Indexer._load_map_scans
    monkeypatch.setattr(worker.Indexer, "_load_map_scans", lambda self: loads.append(1) or real_load(self))

    repo_map = repomap.RepoMap(root)
    svc = IndexService(root, repo_map, cache_path=cache).start()

    try:
        assert svc.wait(120) and _holds_fresh_map(repo_map, root, real_build)
        builds.clear()
        (root / files[5]).write_text("# no event for this one\n" + (root / files[5]).read_text())
        (root / files[4]).write_text("# saved\n" + (root / files[4]).read_text() + "\nprint(len(files))\n")
        repo_map.on_file_event(files[4])
        assert _holds_fresh_map(repo_map, root, real_build)
        assert not builds and not loads
        (root / files[6]).write_text((root / files[6]).read_text() + "\n\ndef zz_used_later(x):\n    return x\n")
        repo_map.on_file_event(files[6])
        assert _holds_fresh_map(repo_map, root, real_build)
        graph = repo_map._graph
        assert graph is not None and graph.file_index[files[8]] in graph.graph.src[
            graph.graph.dst == graph.ident_index["zz_used_later"]]  # (files[8]'s row redone)
        (root / "zz_new.py").write_text("def zz_newer(x):\n    return zz_used_later(x)\n")
        repo_map.on_file_event("zz_new.py")
        (root / files[8]).unlink()
        repo_map.on_file_event(files[8])
        assert _holds_fresh_map(repo_map, root, real_build)
        assert not builds and not loads
    finally:
        svc.stop()


def test_the_app_ranks_an_edited_map_from_the_previous_ranks():
    """After the app splices an edit its solver starts the global pieces from the previous
    map's, moved to the new node numbers: ranks within the certified tolerance of a fresh
    map's (the rank of a map made by edits is that of a rebuild), and for a small change (a
    def with a fresh name) fewer sparse products than a solve from zero. (A large change of
    a small graph, a deleted file of 8, may cost a product more: the start's residual.)"""
    from core.context import repomap
    from core.context.repomap_delta import MapIndex

    texts = {f"m{k}/{p.name}": read_text(p) for k, p in enumerate(MODULES[:8])}
    vocab = RefVocab()
    scans = {rel: f for rel, t in texts.items() if (f := _facts(rel, t, vocab)) is not None}
    graph = build_graph(scans, vocab, exact=True)
    graph.serial = 1
    index = MapIndex(vocab, scans)
    app = repomap.RepoMap(MODULES[0].parent)
    app.use_external_index(prepare=False)
    app.install(graph=graph, warm=False)
    app.prefetch()
    words = sorted({m.group(3) for t in texts.values() for m in _DEF.finditer(t)})
    rel, gone = sorted(scans)[1], sorted(scans)[4]
    changes = [(rel, texts[rel] + "\n\ndef zz_fresh_name(x):\n    return x\n"),
               (rel, texts[rel] + f"\n\ndef {words[3]}(x):\n    return x\n"), (gone, None)]
    for k, (path, text) in enumerate(changes):
        facts = _facts(path, text, vocab) if text is not None else None
        if facts is None:
            scans.pop(path)
        else:
            scans[path] = facts
        made = index.update(graph, path, facts)
        assert made is not None
        graph, edit = made
        graph.serial = edit_serial = k + 2
        assert app.apply_deltas([dataclasses.replace(edit, serial=edit_serial)], (1, 1, True))
        assert app._graph is not None and _same(app._graph, build_graph(scans, vocab, exact=True))
        app.prefetch()
        seeded = app._solver
        fresh = repomap.RepoMap(MODULES[0].parent)
        fresh.use_external_index(prepare=False)
        fresh.install(graph=build_graph(scans, vocab, exact=True), warm=False)
        fresh.prefetch()
        assert seeded is not None and fresh._solver is not None
        if k == 0:
            assert seeded.products < fresh._solver.products, (seeded.products, fresh._solver.products)
        got = app._ranks(app._graph, [], [], [])
        want = fresh._ranks(fresh._graph, [], [], [])  # type: ignore[arg-type]
        assert float(np.abs(got - want).sum()) <= 2 * repomap.RANK_TOLERANCE


def test_an_edit_that_does_not_fit_the_map_held_is_refused():
    """An edit whose rows or file do not fit the app's map (never made for it) is refused
    (the caller asks for the whole map), and the map held is left as it was."""
    from core.context import repomap
    from core.context.repomap_delta import MapIndex

    texts = {f"m{k}/{p.name}": read_text(p) for k, p in enumerate(MODULES[:4])}
    vocab = RefVocab()
    scans = {rel: f for rel, t in texts.items() if (f := _facts(rel, t, vocab)) is not None}
    graph = build_graph(scans, vocab, exact=True)
    graph.serial = 7
    rel = min(scans)
    scans[rel] = facts = _facts(rel, texts[rel] + "\ndef zz_brand_new():\n    pass\n", vocab)  # type: ignore[assignment]
    made = MapIndex(vocab, scans).update(graph, rel, facts)
    assert made is not None
    edit = dataclasses.replace(made[1], serial=8)
    app = repomap.RepoMap(MODULES[0].parent)
    app.use_external_index(prepare=False)
    app.install(graph=graph, warm=False)
    for bad in (dataclasses.replace(edit, file=len(graph.files) + 3),
                dataclasses.replace(edit, removed=("zz_not_defined_anywhere",)),
                dataclasses.replace(edit, rows=edit.rows + graph.graph.size)):
        assert not app.apply_deltas([bad], (1, 1, True))
        assert app._graph is graph
    assert app.apply_deltas([edit], (1, 1, True)) and app._graph is not graph


def test_a_scanless_edit_without_every_scan_in_the_cache_loads_the_scans(tmp_path, monkeypatch):
    """Second launch, a mapped file's cached scan gone from the cache: a name-changing save
    cannot find every file that mentions the new name there, so the scans are loaded (then
    the map is edited, not built) and the map equals a fresh build."""
    import sqlite3

    from bench.repo_gen import generate
    from core.context import repomap
    from core.indexing import worker
    from core.indexing.cache import cache_file
    from core.indexing.service import IndexService

    root = generate(tmp_path / "repo", 12, 1)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    (root / files[3]).write_text((root / files[3]).read_text() + "\nprint(zz_used_later(1))\n")
    cache = cache_file(root, tmp_path / "cache")
    first = IndexService(root, repomap.RepoMap(root), cache_path=cache).start()
    assert first.wait(120)
    first.stop()
    db = sqlite3.connect(cache)
    db.execute("UPDATE files SET tags = NULL WHERE path = ?", (files[3],))  # (its scan: not in the cache)
    db.commit()
    db.close()
    real_build = repomap.build_graph
    loads: list[int] = []
    builds: list[int] = []
    monkeypatch.setattr(repomap, "build_graph", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    real_load = worker.Indexer._load_map_scans
    monkeypatch.setattr(worker.Indexer, "_load_map_scans", lambda self: loads.append(1) or real_load(self))
    repo_map = repomap.RepoMap(root)
    svc = IndexService(root, repo_map, cache_path=cache).start()
    try:
        assert svc.wait(120) and _holds_fresh_map(repo_map, root, real_build)
        builds.clear()
        (root / files[6]).write_text((root / files[6]).read_text() + "\n\ndef zz_used_later(x):\n    return x\n")
        repo_map.on_file_event(files[6])
        assert _holds_fresh_map(repo_map, root, real_build)
        assert loads == [1] and not builds
    finally:
        svc.stop()
