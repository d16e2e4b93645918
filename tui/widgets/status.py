"""The status bar: profile, live speed, connection state and the last answer's timings."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

LIGHTNING = "\u26a1"
BRAIN = "\U0001f9e0"


def edge_note(step: int, index: int, total: int) -> str:
    """What a j (step +1) or k (-1) that could not move says: at which end the selection is,
    and where ("last hunk (47 of 47)"), or that there is no hunk yet to select."""
    if total <= 0:
        return "no hunks yet"
    return f"{'last' if step > 0 else 'first'} hunk ({index + 1} of {total})"


class StatusBar(Static):
    """One line at the bottom of the main screen; fields are set by the app."""

    mode: reactive[str] = reactive("prompt")  # "prompt" | "review": where single keys go
    profile: reactive[str] = reactive("spark")
    connection: reactive[str] = reactive("connecting")
    tokens: reactive[int] = reactive(0)
    tokens_per_s: reactive[float | None] = reactive(None)
    ttft_ms: reactive[float | None] = reactive(None)
    streaming: reactive[bool] = reactive(False)
    note: reactive[str] = reactive("")
    extra: reactive[str] = reactive("")
    context = reactive(None)  # a ContextMeter state: percent, band, warning
    unread: reactive[int] = reactive(0)
    forecast: reactive[str] = reactive("")  # the profile's prediction and the gap (gap_text)
    edge: reactive[str] = reactive("")  # a j/k that could not move: where the selection is (edge_note)

    def render(self) -> Text:
        text = Text()
        text.append(f" {self.mode.upper()} ", style="bold reverse green" if self.mode == "review" else "bold reverse blue")
        mark = LIGHTNING if self.profile == "spark" else BRAIN
        text.append(f" {mark} {self.profile} ", style="bold reverse")
        text.append("  ")
        conn_style = "green" if self.connection == "connected" else "yellow"
        text.append(f"core: {self.connection}", style=conn_style)
        rate = f"{self.tokens_per_s:,.0f} tok/s" if self.tokens_per_s else "- tok/s"
        ttft = f"TTFT {self.ttft_ms:,.0f} ms" if self.ttft_ms is not None else "TTFT -"
        live = " (streaming)" if self.streaming else ""
        text.append(f"  {rate}  {ttft}  {self.tokens} tok{live}")
        if self.forecast:
            text.append(f"  {self.forecast}", style="dim")
        if self.edge:  # first after the fixed fields: it stays in view on a narrow terminal
            text.append(f"  {self.edge}", style="bold")
        if self.note:
            text.append(f"  {self.note}", style="italic")
        if self.context is not None:
            band_style = {"sharp": "green", "good": "cyan", "compaction likely": "yellow"}.get(
                self.context.band, "bold red")
            filled = min(10, round(self.context.percent / 10))
            text.append("  ctx ")
            text.append("█" * filled + "░" * (10 - filled), style=band_style)
            text.append(f" {self.context.percent:.0f}%", style=band_style)
        if self.unread:
            text.append(f"  {self.unread} unread accept(s)", style="bold yellow")
        if self.extra:
            text.append(f"  {self.extra}")
        return text
