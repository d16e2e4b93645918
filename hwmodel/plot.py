"""Plain-text charts for `spark hw sweep`: no plotting dependency, works in any terminal."""

from __future__ import annotations

BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(value: float, maximum: float, width: int) -> str:
    """A horizontal bar with eighth-block resolution."""
    if maximum <= 0 or value <= 0:
        return ""
    eighths = round(value / maximum * width * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + (BLOCKS[part] if part else "")


def bar_chart(labels: list[str], series: dict[str, list[float]], width: int = 40) -> str:
    """One block of bars per series, each scaled to its own maximum."""
    lines: list[str] = []
    pad = max((len(label) for label in labels), default=0)
    for name, values in series.items():
        top = max(values, default=0.0)
        lines.append(f"{name} (max {top:,.1f})")
        for label, value in zip(labels, values):
            lines.append(f"  {label.rjust(pad)} │{bar(value, top, width)} {value:,.1f}")
    return "\n".join(lines)
