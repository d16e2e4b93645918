"""What the app's start imports (issue 14: a second launch's first frame < 1 s): a new
`Workstation` makes neither its repo map nor its duplicate index, so numpy and the map's
modules (~70-100 ms of CPU, on the app's way to its first frame) load only when the map or
the index is first used. Checked in a fresh interpreter (this one has them loaded)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from core.workstation import Workstation
station = Workstation(sys.argv[1])
before = sorted(m for m in ("numpy", "core.context.repomap", "core.detectors.duplicates") if m in sys.modules)
station.context.repo_map.all_files()
station.dups.function_count
after = sorted(m for m in ("numpy", "core.context.repomap", "core.detectors.duplicates") if m in sys.modules)
print(before, after)
"""


def test_a_new_workstation_imports_no_map_and_no_index(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], check=False, capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "['core.context.repomap',", "'core.detectors.duplicates',", "'numpy']"]
