"""Verify before accept: checks and the project's own tests run on a proposal while the
user reads it, in a scratch copy of the tree, so a broken subset is caught before it is
written.  Modules: checks (milliseconds), shadow (the scratch copy), detect/select (which
tests), runner (one test process), verifier (orchestration), fixloop (send failures back).
"""

from core.errors import SparkError


class VerifyError(SparkError):
    """Verification could not run (no tree, a bad `[verify]` setting); says why."""
