"""Paper: a light theme for bright rooms and screenshots."""

from textual.theme import Theme

THEME = Theme(
    name="paper",
    primary="#0B62D6",
    secondary="#5A3FC0",
    accent="#D9480F",
    foreground="#1F2328",
    background="#FAFAF7",
    surface="#F0EFEA",
    panel="#E2E0D8",
    success="#1A7F37",
    warning="#9A6700",
    error="#CF222E",
    dark=False,
)
