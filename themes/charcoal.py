"""Charcoal and orange: the seed's own palette (seed 002's mockups), sparkstation's default."""

from textual.theme import Theme

THEME = Theme(
    name="charcoal",
    primary="#FF8C1A",
    secondary="#C25E00",
    accent="#FFA94D",
    foreground="#E6E1DC",
    background="#1C1C1E",
    surface="#26262A",
    panel="#34343A",
    success="#7BC67E",
    warning="#FFB347",
    error="#FF5F56",
    dark=True,
)
