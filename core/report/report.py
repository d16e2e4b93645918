"""The session report: what was asked, what was kept, where the time went, and what the
guards caught, rebuilt from the JSONL record.

Waiting is stream time (request sent to done), as the union of intervals so parallel
answers (variations, batches) are not double counted. Reviewing is the time from an
answer's end to the user's last decision on its hunks, minus any time also spent
waiting. The Base comparison asks hwmodel what the Base profile's chip/model would take
for the same tokens (TTFT + tokens / tokens-per-second), answers that ran in parallel
counting once (their slowest); without hwmodel it uses 65 tok/s and 600 ms TTFT.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

FALLBACK_BASE_TOKENS_PER_S = 65.0
FALLBACK_BASE_TTFT_MS = 600.0
DEFAULT_BASE = ("h100-sxm", "llama-3.1-70b", "fp16")


@dataclass(frozen=True)
class BaseRates:
    tokens_per_s: float
    ttft_ms: float
    source: str  # "hwmodel <chip>/<model>" or "fallback"

    def seconds_for(self, tokens: int) -> float:
        return self.ttft_ms / 1000 + max(tokens, 0) / self.tokens_per_s


def base_rates(chip: str | None = None, model: str | None = None, precision: str | None = None,
               *, prompt_tokens: int = 1024) -> BaseRates:
    """The Base profile's predicted speed for one stream, from hwmodel when it can answer."""
    chip = chip or DEFAULT_BASE[0]
    model = model or DEFAULT_BASE[1]
    precision = precision or DEFAULT_BASE[2]
    try:
        from hwmodel.predict import predict

        p = predict(chip, model, batch=1, ctx=max(prompt_tokens, 1) + 512,
                    prompt=max(prompt_tokens, 1), precision=precision)
        tps, ttft = float(p.tokens_per_s_per_seq), float(p.ttft_ms)
        if tps > 0 and ttft >= 0:
            return BaseRates(tps, ttft, f"hwmodel {chip}/{model}")
    except (ImportError, ValueError, KeyError, ArithmeticError, AttributeError, TypeError):
        return BaseRates(FALLBACK_BASE_TOKENS_PER_S, FALLBACK_BASE_TTFT_MS, "fallback")
    return BaseRates(FALLBACK_BASE_TOKENS_PER_S, FALLBACK_BASE_TTFT_MS, "fallback")


@dataclass
class AnswerSummary:
    request_id: str
    prompt: str
    profile: str | None
    kind: str
    tokens: int = 0
    elapsed_s: float | None = None
    ttft_ms: float | None = None
    hunks_shown: int = 0
    accepted: int = 0
    rejected: int = 0


@dataclass(frozen=True)
class Segment:
    """A stretch of session time (seconds from the session start) spent waiting or reviewing."""

    start: float
    end: float
    kind: str  # "wait" | "review"


@dataclass
class SessionReport:
    session_id: str | None
    started_at: float | None
    duration_s: float
    prompts: int
    answers: int
    hunks_shown: int
    hunks_accepted: int
    hunks_rejected: int
    unread_accepts: int
    tokens: int
    prompt_tokens: int
    waiting_s: float
    reviewing_s: float
    base_waiting_s: float
    base_source: str
    lines_added: int
    lines_removed: int
    slop_score: float
    slop_findings: int
    growth_pct: float | None
    duplicates: int
    secrets: int
    sensitive: int
    fresh_contexts: int
    skipped_lines: int = 0
    answer_list: list[AnswerSummary] = field(default_factory=list)
    timeline: list[Segment] = field(default_factory=list)

    @property
    def base_speedup(self) -> float | None:
        """How many times longer the same session would have waited on Base."""
        return self.base_waiting_s / self.waiting_s if self.waiting_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["base_speedup"] = self.base_speedup
        return d


Interval = tuple[float, float]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    out: list[list[float]] = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def subtract(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Parts of the (merged) intervals ``a`` not covered by the (merged) intervals ``b``."""
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
        if cur < e:
            out.append((cur, e))
    return out


def total(intervals: Iterable[Interval]) -> float:
    return sum(e - s for s, e in intervals)


def _num(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else default


def build_report(events: list[dict[str, Any]], base: BaseRates | None = None, *,
                 skipped_lines: int = 0) -> SessionReport:
    """Fold a session's events into its report. ``base``: the Base profile's rates (default:
    `base_rates()` for the built-in Base chip/model)."""
    session_id = next((e.get("id") for e in events if e.get("type") == "session"), None)
    times = [_num(e.get("t")) for e in events if isinstance(e.get("t"), int | float)]
    t0 = min(times) if times else 0.0
    t_end = max(times) if times else 0.0

    answers: dict[str, AnswerSummary] = {}
    hunk_request: dict[str, str] = {}
    wait: list[Interval] = []
    answer_end: dict[str, float] = {}
    last_decision: dict[str, float] = {}
    counts = {"shown": 0, "accepted": 0, "rejected": 0, "unread": 0}
    shown: set[tuple[str, str]] = set()
    final: dict[tuple[str, str], dict[str, Any] | None] = {}
    reviews = review_slop = review_lines = 0
    tokens = prompt_tokens = added = removed = 0
    slop = 0.0
    found = {"slop": 0, "duplicate": 0, "secret": 0, "sensitive": 0}
    growth: float | None = None
    fresh = 0
    prompts = 0

    for e in events:
        kind, t = e.get("type"), _num(e.get("t"))
        rid = str(e.get("request_id", ""))
        if kind == "prompt":
            prompts += 1
            answers[rid] = AnswerSummary(rid, str(e.get("text", ""))[:200], e.get("profile"),
                                         str(e.get("kind", "chat")))
        elif kind == "answer_done":
            a = answers.setdefault(rid, AnswerSummary(rid, "", e.get("profile"), "chat"))
            a.tokens = int(_num(e.get("tokens")))
            a.elapsed_s = _num(e.get("elapsed_s"))
            a.ttft_ms = e.get("ttft_ms") if isinstance(e.get("ttft_ms"), int | float) else None
            tokens += a.tokens
            prompt_tokens += int(_num(e.get("prompt_tokens")))
            wait.append((t - a.elapsed_s, t))
            answer_end[rid] = t
        elif kind == "hunk_shown":
            hid = str(e.get("hunk_id"))
            key = (rid, hid)  # a hunk id repeats when two answers propose the same change
            hunk_request[hid] = rid
            if key not in shown:
                shown.add(key)
                if rid in answers:
                    answers[rid].hunks_shown += 1
        elif kind in ("hunk_decided", "hunk_reverted"):
            hid = str(e.get("hunk_id"))
            req = str(e.get("request_id") or hunk_request.get(hid, ""))
            # the last word on each hunk counts: an accept undone is no longer an accept
            final[(req, hid)] = e if kind == "hunk_decided" else None
            if kind == "hunk_decided" and req:
                last_decision[req] = max(last_decision.get(req, t), t)
        elif kind == "review":
            reviews += 1
            review_slop += int(_num(e.get("slop_findings")))
            review_lines += int(_num(e.get("added_lines")))
        elif kind == "finding":
            fk = e.get("kind")
            if fk in found:
                found[fk] += 1
            if fk == "slop":
                slop += _num(e.get("score"))
            elif fk == "growth" and isinstance(e.get("score"), int | float):
                growth = float(e["score"])
        elif kind == "fresh_context":
            fresh += 1

    counts["shown"] = len(shown)
    for (req, _hid), decision in final.items():
        if decision is None:
            continue
        ok = bool(decision.get("accepted"))
        counts["accepted" if ok else "rejected"] += 1
        if ok:
            counts["unread"] += bool(decision.get("unread"))
            added += int(_num(decision.get("added")))
            removed += int(_num(decision.get("removed")))
        if req in answers:
            if ok:
                answers[req].accepted += 1
            else:
                answers[req].rejected += 1
    if reviews:  # the status bar's figure, from the same records: findings per 100 added lines
        found["slop"] = review_slop
        slop = 100.0 * review_slop / review_lines if review_lines else 0.0

    wait_u = union(wait)
    review = [(answer_end[r], last_decision[r]) for r in answer_end if r in last_decision]
    review_u = subtract(union(review), wait_u)

    if base is None:
        done = [a for a in answers.values() if a.elapsed_s is not None]
        mean_prompt = prompt_tokens // len(done) if done and prompt_tokens else 1024
        base = base_rates(prompt_tokens=mean_prompt)
    base_wait = _base_wait(answers, answer_end, base)

    timeline = sorted([Segment(s - t0, e - t0, "wait") for s, e in wait_u]
                      + [Segment(s - t0, e - t0, "review") for s, e in review_u],
                      key=lambda g: (g.start, g.kind))
    start = min([t0] + [s for s, _ in wait_u])
    return SessionReport(
        session_id=session_id, started_at=t0 if times else None,
        duration_s=max(0.0, t_end - start), prompts=prompts,
        answers=len(answer_end), hunks_shown=counts["shown"],
        hunks_accepted=counts["accepted"], hunks_rejected=counts["rejected"],
        unread_accepts=counts["unread"], tokens=tokens, prompt_tokens=prompt_tokens,
        waiting_s=total(wait_u), reviewing_s=total(review_u), base_waiting_s=base_wait,
        base_source=base.source, lines_added=added, lines_removed=removed,
        slop_score=slop, slop_findings=found["slop"], growth_pct=growth,
        duplicates=found["duplicate"], secrets=found["secret"], sensitive=found["sensitive"],
        fresh_contexts=fresh, skipped_lines=skipped_lines, answer_list=list(answers.values()),
        timeline=timeline)


def _base_wait(answers: dict[str, AnswerSummary], answer_end: dict[str, float],
               base: BaseRates) -> float:
    """Base time for the same answers; answers that overlapped in time count as one group
    (they would have run in parallel on Base too), taking the slowest of the group."""
    spans = sorted((answer_end[r] - (answers[r].elapsed_s or 0.0), answer_end[r],
                    base.seconds_for(answers[r].tokens)) for r in answer_end)
    total_s, group_end, group_max = 0.0, None, 0.0
    for s, e, cost in spans:
        if group_end is not None and s < group_end:
            group_end, group_max = max(group_end, e), max(group_max, cost)
            continue
        total_s += group_max
        group_end, group_max = e, cost
    return total_s + group_max
