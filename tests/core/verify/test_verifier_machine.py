"""State machine: whatever the order of proposals, decisions and rejections, the settled
report of the accepted subset is exactly the quick checks of that subset's files (new
problems only), and the user's files never change."""

from __future__ import annotations

import time

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from core.edits.parser import parse_edits
from core.edits.proposal import build_proposal
from core.verify.baseline import BaselineCache
from core.verify.checks import new_problems, quick_check
from core.verify.verifier import Scope, Verifier
from core.workspace.files import Workspace

FILES = {
    "app.py": "import os\n\n\ndef cwd():\n    return os.getcwd()\n",
    "util.py": "def one():\n    return 1\n",
}
ANSWERS = [
    # import + use in two hunks of app.py, and a new helper in util.py
    ("app.py\n```python\n<<<<<<< SEARCH\nimport os\n=======\nimport json\nimport os\n>>>>>>> REPLACE"
    "\n```\n\napp.py\n```python\n<<<<<<< SEARCH\n    return os.getcwd()\n=======\n"
    "    return os.getcwd()\n\n\ndef dump(x):\n    return json.dumps(x)\n>>>>>>> REPLACE\n```\n\n"
    "util.py\n```python\n<<<<<<< SEARCH\n    return 1\n=======\n    return 1\n\n\ndef two():\n"
    "    return one() + 1\n>>>>>>> REPLACE\n```\n"),
    # a syntax error in one hunk
    "util.py\n```python\n<<<<<<< SEARCH\ndef one():\n=======\ndef one(:\n>>>>>>> REPLACE\n```\n",
    # drops the import the rest of the file needs
    "app.py\n```python\n<<<<<<< SEARCH\nimport os\n=======\nimport sys\n>>>>>>> REPLACE\n```\n",
]


class VerifierMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        import tempfile
        from pathlib import Path

        self.root = Path(tempfile.mkdtemp(prefix="spark-vm-"))
        for rel, text in FILES.items():
            (self.root / rel).write_text(text)
        self.ws = Workspace(self.root)
        self.v = Verifier(self.ws, run_tests=False, baseline=BaselineCache(), debounce_s=0.0)
        self.proposal = None
        self.accepted: set[str] | None = None

    @rule(i=st.integers(0, len(ANSWERS) - 1))
    def propose(self, i: int) -> None:
        self.proposal = build_proposal(self.ws, parse_edits(ANSWERS[i]))
        self.accepted = None
        self.v.propose(self.proposal, final=True)

    @precondition(lambda self: self.proposal is not None)
    @rule(data=st.data())
    def decide(self, data) -> None:
        ids = [h.id for h in self.proposal.hunks]
        self.accepted = set(data.draw(st.lists(st.sampled_from(ids), unique=True)))
        self.v.decisions(self.accepted)

    @rule()
    def reject(self) -> None:
        self.v.cancel()
        self.proposal, self.accepted = None, None

    @invariant()
    def subset_report_is_the_subsets_checks(self) -> None:
        if self.proposal is None or self.accepted is None:
            return
        deadline = time.monotonic() + 10
        rep = self.v.report(Scope.ACCEPTED)
        while time.monotonic() < deadline:
            rep = self.v.report(Scope.ACCEPTED)
            if rep.hunks == frozenset(self.accepted) and rep.settled:
                break
            time.sleep(0.01)
        assert rep.hunks == frozenset(self.accepted) and rep.settled, rep
        files = [f for f in self.proposal.files if any(h.id in self.accepted for h in f.hunks)]
        want = new_problems(quick_check({f.path: f.old_text for f in files}),
                            quick_check({f.path: f.result_text(self.accepted) for f in files}))
        assert sorted(p.key for p in rep.problems or []) == sorted(p.key for p in want)

    @invariant()
    def users_files_never_change(self) -> None:
        for rel, text in FILES.items():
            assert (self.root / rel).read_text() == text

    def teardown(self) -> None:
        import shutil

        self.v.close(wait=True)
        shutil.rmtree(self.root, ignore_errors=True)


VerifierMachine.TestCase.settings = settings(max_examples=12, stateful_step_count=6,
                                             deadline=None)
TestVerifierMachine = VerifierMachine.TestCase
