"""Ranking a draft prompt ahead of Enter gives the same request, without ranking again."""

from __future__ import annotations

from bench.repo_gen import generate
from core.context import repomap
from core.context.prompt import ChatContext
from core.indexing.prefetch import prefetch


def test_prefetched_ranks_are_reused_and_change_nothing(tmp_path, monkeypatch):
    root = generate(tmp_path / "repo", 30, seed=3)
    prompt = "make render_payload in src/pkg0000/mod04.py retry"
    plain = ChatContext(root, 32_000)
    plain.add(["src/pkg0000/mod02.py"])
    expected, _ = plain.build_request(prompt)

    ctx = ChatContext(root, 32_000)
    ctx.add(["src/pkg0000/mod02.py"])
    calls = []
    real = repomap.rank_focus

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(repomap, "rank_focus", counting)
    prefetch(ctx, prompt)
    assert len(calls) == 1
    messages, _ = ctx.build_request(prompt)
    assert len(calls) == 1, "Enter reused the draft's ranks"
    assert messages == expected
    ctx.build_request(prompt + " and unknown_name too")  # names nothing defines: same focus
    assert len(calls) == 1
    import re

    defined = re.search(r"^def (\w+)", (root / "src/pkg0000/mod07.py").read_text(), re.MULTILINE).group(1)
    ctx.build_request(f"{prompt} and {defined}")  # a name the tree defines: ranked again
    assert len(calls) == 2


def test_prefetch_ignores_commands_and_empty_drafts(tmp_path):
    root = generate(tmp_path / "repo", 5, seed=3)
    ctx = ChatContext(root, 32_000)
    prefetch(ctx, "   ")
    prefetch(ctx, "/add x.py")
    assert not ctx.repo_map._rank_cache
