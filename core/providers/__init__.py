"""Model providers: built-in presets, detection of what the user already has, and writing
the choice into the user's config (the first-run screen and `spark init` share all of it)."""

from core.providers.detect import Found, detect_all, detect_env, detect_servers
from core.providers.presets import PRESETS, Preset, get_preset
from core.providers.write import profiles_for, write_profiles

__all__ = ["PRESETS", "Found", "Preset", "detect_all", "detect_env", "detect_servers",
           "get_preset", "profiles_for", "write_profiles"]
