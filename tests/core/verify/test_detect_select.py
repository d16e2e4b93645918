"""Finding the test command and the tests related to a change."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.verify import VerifyError
from core.verify.detect import Runner, detect, read_settings
from core.verify.select import changed_names, imports_of, module_name, select_tests


def _tree(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.mark.parametrize(("files", "runner"), [
    ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, Runner.PYTEST),
    ({"setup.cfg": "[tool:pytest]\naddopts = -q\n"}, Runner.PYTEST),
    ({"tox.ini": "[testenv]\ncommands = pytest\n"}, Runner.PYTEST),
    ({"pytest.ini": "[pytest]\n"}, Runner.PYTEST),
    ({"tests/test_a.py": "def test_a(): pass\n"}, Runner.PYTEST),
    ({"package.json": '{"scripts": {"test": "jest"}}'}, Runner.NPM),
    ({"go.mod": "module x\n"}, Runner.GO),
    ({"Cargo.toml": "[package]\nname='x'\n"}, Runner.CARGO),
    ({".spark.toml": '[verify]\ncommand = "make check"\n', "go.mod": "module x\n"}, Runner.CUSTOM),
    ({".spark.toml": '[verify]\ncommand = ["python", "-m", "pytest", "-x"]\n'}, Runner.PYTEST),
])
def test_detects_the_test_command(tmp_path, files, runner):
    cmd = detect(_tree(tmp_path, files))
    assert cmd is not None and cmd.runner is runner
    assert cmd.why


def test_no_tests_and_placeholder_npm_script_are_none(tmp_path):
    _tree(tmp_path, {"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\""}}',
                     "README.md": "hi"})
    assert detect(tmp_path) is None


@pytest.mark.parametrize(("table", "message"), [
    ({"comand": "x"}, "unknown field 'comand'"),
    ({"timeout_s": -1}, "timeout_s"),
    ({"max_tests": 1.5}, "max_tests"),
    ({"enabled": "yes"}, "enabled"),
    ({"command": "x 'unclosed"}, "command"),
])
def test_bad_settings_say_which_field(tmp_path, table, message):
    with pytest.raises(VerifyError, match=message):
        read_settings(tmp_path, table)


def test_settings_from_spark_toml(tmp_path):
    _tree(tmp_path, {".spark.toml": "[verify]\ntimeout_s = 5\nmax_tests = 3\nenabled = false\n"})
    s = read_settings(tmp_path)
    assert (s.timeout_s, s.max_tests, s.enabled) == (5.0, 3, False)


def test_module_names_and_relative_imports():
    assert module_name("src/pkg/a.py") == "pkg.a"
    assert module_name("pkg/__init__.py") == "pkg"
    assert module_name("README.md") is None
    found = imports_of("pkg/sub/m.py", "from . import x\nfrom ..dates import to_date\nimport os.path\n")
    assert {"pkg.sub", "pkg.sub.x", "pkg.dates", "pkg.dates.to_date", "os.path"} <= found
    # a file that does not parse still says what it imports
    assert "pkg.a" in imports_of("t.py", "from pkg.a import f\ndef broken(:\n")


PROJECT = {
    "app/__init__.py": "",
    "app/dates.py": "def to_date(s):\n    return s\n",
    "app/report.py": "from .dates import to_date\n\ndef render(x):\n    return to_date(x)\n",
    "app/other.py": "def other():\n    return 1\n",
    "tests/test_dates.py": "from app.dates import to_date\n\ndef test_d():\n    assert to_date(1)\n",
    "tests/test_report.py": "from app.report import render\n\ndef test_r():\n    assert render(1)\n",
    "tests/test_other.py": "from app import other\n\ndef test_o():\n    assert other.other()\n",
}


def test_selects_tests_importing_the_change_directly_or_through_a_module(tmp_path):
    root = _tree(tmp_path, PROJECT)
    sel = select_tests(root, ["app/dates.py"], names={"to_date"})
    assert sel.paths == ("tests/test_dates.py", "tests/test_report.py")
    assert not sel.run_all
    sel = select_tests(root, ["app/other.py"])
    assert sel.paths == ("tests/test_other.py",)
    capped = select_tests(root, ["app/dates.py"], cap=1)
    assert capped.paths == ("tests/test_dates.py",) and capped.left_out == 1


def test_changed_test_file_conftest_prose_and_unrelated_code(tmp_path):
    root = _tree(tmp_path, {**PROJECT, "tests/conftest.py": "", "tools/x.py": "X = 1\n"})
    assert select_tests(root, ["tests/test_other.py"]).paths == ("tests/test_other.py",)
    assert len(select_tests(root, ["tests/conftest.py"]).paths) == 3
    assert select_tests(root, ["README.md", "docs/a.rst"]).nothing
    assert select_tests(root, ["tools/x.py"]).run_all


def test_changed_names_are_the_functions_whose_source_differs():
    old = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    new = "def a():\n    return 1\n\ndef b():\n    return 3\n\ndef c():\n    pass\n"
    assert changed_names(old, new) == {"b", "c"}


@st.composite
def projects(draw):
    """Modules m0..mN importing earlier ones, tests importing some modules."""
    n = draw(st.integers(1, 6))
    files = {"pkg/__init__.py": ""}
    deps = {}
    for i in range(n):
        deps[i] = draw(st.sets(st.integers(0, i - 1), max_size=2)) if i else set()
        files[f"pkg/m{i}.py"] = "".join(f"from pkg.m{d} import f{d}\n" for d in sorted(deps[i])) \
            + f"\n\ndef f{i}():\n    return {i}\n"
    tests = {}
    for t in range(draw(st.integers(1, 5))):
        tests[t] = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=2))
        files[f"tests/test_t{t}.py"] = "".join(f"from pkg.m{m} import f{m}\n" for m in sorted(tests[t])) \
            + "\n\ndef test_x():\n    assert True\n"
    changed = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=2))
    return files, deps, tests, changed


@settings(max_examples=40, deadline=None)
@given(projects(), st.integers(1, 6))
def test_selection_follows_imports_and_the_cap(tmp_path_factory, project, cap):
    files, deps, tests, changed = project
    root = _tree(tmp_path_factory.mktemp("sel"), files)
    sel = select_tests(root, [f"pkg/m{c}.py" for c in changed], cap=cap)
    # modules within MAX_DEPTH - 1 import steps of a change (tests add the last step)
    near = {c: 0 for c in changed}
    frontier = set(changed)
    for step in range(1, 3):
        frontier = {m for m, ds in deps.items() if ds & frontier and m not in near}
        near.update({m: step for m in frontier})
    related = {f"tests/test_t{t}.py" for t, ms in tests.items() if ms & set(near)}
    assert len(sel.paths) <= cap
    assert set(sel.paths) <= related
    if related:
        assert len(sel.paths) == min(cap, len(related)) and sel.left_out == len(related) - len(sel.paths)
        direct = sorted(f"tests/test_t{t}.py" for t, ms in tests.items() if ms & set(changed))
        assert list(sel.paths[:len(direct)]) == direct[:cap]  # direct importers first
    else:
        assert sel.run_all
