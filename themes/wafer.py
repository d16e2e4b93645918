"""Wafer: cool blues after the WSE-3's silicon, easy on long sessions."""

from textual.theme import Theme

THEME = Theme(
    name="wafer",
    primary="#4FB3FF",
    secondary="#7A8CFF",
    accent="#00D1B2",
    foreground="#D8E2EC",
    background="#0E1621",
    surface="#15202E",
    panel="#1F2D3D",
    success="#3DD68C",
    warning="#F5C451",
    error="#FF6B6B",
    dark=True,
)
