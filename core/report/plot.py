"""Terminal rendering of a session report: a waiting-vs-reviewing timeline in unicode
block heights, and the text report `spark report` prints (the in-app screen can reuse it).
Plain strings, no dependencies, so it renders in any terminal and in tests."""

from __future__ import annotations

from core.report.report import SessionReport

BLOCKS = " ▁▂▃▄▅▆▇█"


def _fractions(report: SessionReport, kind: str, width: int, span: float) -> list[float]:
    bin_s = span / width
    out = [0.0] * width
    for seg in report.timeline:
        if seg.kind != kind:
            continue
        first = max(0, int(seg.start / bin_s))
        last = min(width - 1, int(seg.end / bin_s))
        for i in range(first, last + 1):
            lo, hi = i * bin_s, (i + 1) * bin_s
            out[i] += max(0.0, min(hi, seg.end) - max(lo, seg.start)) / bin_s
    return [min(1.0, f) for f in out]


def _row(fracs: list[float]) -> str:
    # any time at all in a bin shows at least the lowest block, so short waits stay visible
    return "".join(BLOCKS[max(1, round(f * 8))] if f > 0 else " " for f in fracs)


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"


def render_timeline(report: SessionReport, width: int = 60) -> str:
    """Two rows (waiting, reviewing) over the session's time, one column per time bin, the
    block height the share of that bin spent so; then a time axis."""
    width = max(10, width)
    span = max([seg.end for seg in report.timeline] + [report.duration_s, 1e-9])
    label = 10
    lines = [f"{'waiting':<{label}}|{_row(_fractions(report, 'wait', width, span))}|",
             f"{'reviewing':<{label}}|{_row(_fractions(report, 'review', width, span))}|"]
    left, right = "0s", _seconds(span)
    mid = _seconds(span / 2)
    gap = width - len(left) - len(right) - len(mid)
    axis = left + " " * (gap // 2) + mid + " " * (gap - gap // 2) + right if gap >= 2 \
        else left + " " * max(1, width - len(left) - len(right)) + right
    lines.append(" " * (label + 1) + axis)
    return "\n".join(lines)


def _bar(part: float, whole: float, width: int = 30) -> str:
    n = round(width * part / whole) if whole > 0 else 0
    return "█" * n + "░" * (width - n)


def format_text(report: SessionReport, width: int = 60) -> str:
    """The whole report as terminal text."""
    r = report
    busy = r.waiting_s + r.reviewing_s
    lines = [
        f"session {r.session_id or '?'}  ({_seconds(r.duration_s)})",
        (f"prompts {r.prompts}   answers {r.answers}   tokens {r.tokens}"
         f"   fresh contexts {r.fresh_contexts}"),
        (f"hunks   shown {r.hunks_shown}   accepted {r.hunks_accepted}"
         f"   rejected {r.hunks_rejected}   unread accepts {r.unread_accepts}"),
        f"lines   +{r.lines_added} -{r.lines_removed}"
        + (f"   growth {r.growth_pct:.1f}%" if r.growth_pct is not None else ""),
        "",
        f"waiting   {_bar(r.waiting_s, busy)} {_seconds(r.waiting_s)}",
        f"reviewing {_bar(r.reviewing_s, busy)} {_seconds(r.reviewing_s)}",
        f"on Base the same answers would have waited {_seconds(r.base_waiting_s)}"
        + (f" ({r.base_speedup:.1f}x longer)" if r.base_speedup else "")
        + f"  [{r.base_source}]",
        "",
        (f"caught  slop {r.slop_findings} ({r.slop_score:.1f}/100 lines)   duplicates {r.duplicates}"
         f"   secrets {r.secrets}   sensitive paths {r.sensitive}"),
    ]
    if r.timeline:
        lines += ["", render_timeline(r, width)]
    if r.answer_list:
        lines += ["", "answers:"]
        for a in r.answer_list:
            took = _seconds(a.elapsed_s) if a.elapsed_s is not None else "unfinished"
            prompt = a.prompt.replace("\n", " ")
            prompt = prompt if len(prompt) <= 48 else prompt[:47] + "…"
            lines.append(f"  {a.profile or '?':<6} {a.kind:<9} {a.tokens:>6} tok {took:>8}"
                         f"  +{a.accepted}/-{a.rejected}  {prompt}")
    if r.skipped_lines:
        lines.append(f"({r.skipped_lines} unreadable line(s) in the record were skipped)")
    return "\n".join(lines)
