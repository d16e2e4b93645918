"""Benchmark: the repo map on a large tree (the standard library) and prompt assembly.

Numbers are ratios against baselines measured in the same run, because the machine is
shared and noisy:
- cold map (list, scan, graph, rank, render within 2,048 tokens) vs reading every source
  file (the floor) and vs `ast.parse` of every file (the straightforward way to map Python);
- a warm render for a new prompt, and an update after one file event, vs the cold map;
- `build_request` on a 128K window with files in the chat.
The target from issue 10: the standard library maps within a budget in under 2 s.
"""

from __future__ import annotations

import ast
import os
import shutil
import sysconfig
import tempfile
import time
from pathlib import Path

TARGET_S = 2.0


def _timed(fn) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds, result)."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - w0, time.process_time() - c0, result


def _source_files(root: Path) -> list[Path]:
    from core.context.tags import language_for
    from core.context.tree import list_files

    return [root / rel for rel in list_files(root) if language_for(rel)]


def main() -> None:
    from core.context.prompt import ChatContext
    from core.context.repomap import RepoMap

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "stdlib"
        shutil.copytree(stdlib, root, ignore=shutil.ignore_patterns(
            "__pycache__", "site-packages", "*.pyc"))
        files = _source_files(root)
        size_mb = sum(p.stat().st_size for p in files) / 1e6

        read_w, read_c, _ = _timed(lambda: [p.read_bytes() for p in files])

        def parse_all() -> int:
            ok = 0
            for p in files:
                try:
                    ast.parse(p.read_bytes())
                    ok += 1
                except (SyntaxError, ValueError):
                    pass
            return ok

        ast_w, ast_c, _ = _timed(parse_all)

        repo = RepoMap(root)
        cold_w, cold_c, result = _timed(lambda: repo.render(2048))
        warm_w, warm_c, warm = _timed(
            lambda: repo.render(2048, chat_files=["json/decoder.py"],
                                prompt="fix JSONDecodeError positions in scanstring"))

        target = root / "json" / "decoder.py"
        target.write_text(target.read_text() + "\n\ndef added_helper(doc, pos):\n    return pos\n")
        event_w, event_c, _ = _timed(
            lambda: (repo.on_file_event("json/decoder.py"), repo.render(2048))[1])
        mapped = any(e.definition.name == "added_helper" for e in repo.rank())

        ctx = ChatContext(root, 128_000)
        ctx.add(["json/decoder.py", "json/scanner.py"])
        ctx.repo_map = repo  # reuse the warm map, as the app does for a whole session
        build_w, build_c, built = _timed(lambda: ctx.build_request("make decoding faster"))
        messages, report = built

    print(f"tree: standard library, {len(files)} source files, {size_mb:.1f} MB")
    print(f"baseline read all files       {read_w:7.3f} s wall {read_c:7.3f} s cpu")
    print(f"baseline ast.parse all files  {ast_w:7.3f} s wall {ast_c:7.3f} s cpu")
    print(f"cold repo map (2,048 tokens)  {cold_w:7.3f} s wall {cold_c:7.3f} s cpu  "
          f"{result.tokens} tokens, {len(result.entries)} lines")
    print(f"  = {cold_w / ast_w:.2f}x the time of ast.parse of every file, "
          f"{cold_w / read_w:.1f}x the time to read them")
    load = os.getloadavg()[0]
    print(f"  target < {TARGET_S:.1f} s: wall {'met' if cold_w < TARGET_S else 'MISSED'}, "
          f"cpu {'met' if cold_c < TARGET_S else 'MISSED'} (load average {load:.1f} on "
          f"{os.cpu_count()} cores; wall exceeds cpu when other work shares them)")
    print(f"warm render, new prompt       {warm_w:7.3f} s wall {warm_c:7.3f} s cpu  "
          f"= {warm_w / cold_w:.2f}x cold "
          f"({warm.tokens} tokens)")
    print(f"one file event + render       {event_w:7.3f} s wall {event_c:7.3f} s cpu  "
          f"= {event_w / cold_w:.2f}x cold "
          f"(the new definition is in the map's index: {mapped})")
    print(f"build_request, 128K window    {build_w:7.3f} s wall {build_c:7.3f} s cpu  "
          f"= {build_w / cold_w:.2f}x cold "
          f"({report.total:,} tokens in {len(messages)} messages, {report.fraction:.1%})")


if __name__ == "__main__":
    main()
