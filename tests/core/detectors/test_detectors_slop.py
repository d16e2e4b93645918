"""Each slop rule on real-looking code, fixes that apply cleanly, and added-lines-only."""

from __future__ import annotations

import ast
import textwrap

import pytest

from core.detectors.slop import SlopSession, added_line_numbers, analyze_change


def findings(code: str, old: str = "") -> list:
    return analyze_change("mod.py", old, textwrap.dedent(code)).findings


def rules(code: str, old: str = "") -> set[str]:
    return {f.rule_id for f in findings(code, old)}


def apply_fix(text: str, finding) -> str:
    lines = text.splitlines(keepends=True)
    start, end = finding.fix_start, finding.fix_end
    return "".join(lines[: start - 1]) + finding.fix + "".join(lines[end:])


CASES = {
    "PERF401": """
        def active_names(users):
            names = []
            for user in users:
                if user.active:
                    names.append(user.name.title())
            return names
    """,
    "SIM103": """
        def is_admin(user):
            if user.role == "admin":
                return True
            else:
                return False
    """,
    "RET505": """
        def describe(order):
            if order.paid:
                return f"order {order.id} paid"
            else:
                log_unpaid(order)
                return f"order {order.id} pending"
    """,
    "F841": """
        def total(items):
            subtotal = sum(i.price for i in items)
            tax = subtotal * 0.2
            return subtotal
    """,
    "F401": """
        import json
        import os


        def home():
            return os.path.expanduser("~")
    """,
    "SIM102": """
        def maybe_retry(resp, attempt):
            if resp.status >= 500:
                if attempt < 3:
                    schedule_retry(resp, attempt + 1)
    """,
    "E712": """
        def visible(items):
            return [i for i in items if i.hidden == False]
    """,
    "S110": """
        def load_cache(path):
            try:
                return read_json(path)
            except Exception:
                pass
            return {}
    """,
    "SLOP001": """
        def bump(counter, step):
            # increment the counter
            counter += step
            return counter
    """,
    "SLOP002": """
        def first_or_none(rows):
            matches = [r for r in rows if r.ok]
            if len(matches) == 0:
                return None
            return matches[0]
    """,
    "SLOP004": """
        def scan(groups):
            for group in groups:
                if group.enabled:
                    for item in group.items:
                        if item.ready:
                            with item.lock:
                                if item.value > 0:
                                    emit(item)
    """,
    "SLOP005": """
        def sync_users(db, remote):
            for user in remote.fetch_users(page_size=100):
                record = db.users.get(user.id) or db.users.new(user.id)
                record.update_from(user.name, user.email, user.groups)
                db.audit.write("sync", record.id, record.version)
            db.commit()

        def sync_admins(db, remote):
            for user in remote.fetch_admins(page_size=100):
                record = db.users.get(user.id) or db.users.new(user.id)
                record.update_from(user.name, user.email, user.groups)
                db.audit.write("sync", record.id, record.version)
            db.commit()
    """,
    "SLOP006": """
        def is_weekend(day):
            return day in ("saturday", "sunday", "samedi", "dimanche")

        def weekend_hours(day, hours):
            if day in ("saturday", "sunday", "samedi", "dimanche"):
                return 0
            return hours
    """,
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires_on_real_looking_code(rule: str) -> None:
    got = findings(CASES[rule])
    hit = [f for f in got if f.rule_id == rule]
    assert hit, f"{rule} not found in {[f.rule_id for f in got]}"
    assert all(f.explanation and f.message for f in hit)


def test_long_function_rule() -> None:
    body = "".join(f"    total += values[{i}] * {i}\n" for i in range(105))
    code = "def weigh(values):\n    total = 0\n" + body + "    return total\n"
    got = [f for f in findings(code) if f.rule_id == "SLOP003"]
    assert len(got) == 1 and "108 lines" in got[0].message


@pytest.mark.parametrize("rule", ["RET505", "SLOP001", "SLOP002", "F401", "SIM103", "PERF401"])
def test_mechanical_fixes_apply_and_clear_the_finding(rule: str) -> None:
    text = textwrap.dedent(CASES[rule])
    [f] = [f for f in analyze_change("mod.py", "", text).findings if f.rule_id == rule]
    assert f.fix is not None
    fixed = apply_fix(text, f)
    ast.parse(fixed)
    assert rule not in {g.rule_id for g in analyze_change("mod.py", "", fixed).findings}


def test_only_added_lines_are_blamed() -> None:
    old = textwrap.dedent(CASES["SIM103"])
    new = old + "\n\ndef clean(x):\n    return x.strip()\n"
    assert analyze_change("mod.py", old, new).findings == []
    report = analyze_change("mod.py", old, new + textwrap.dedent(CASES["RET505"]))
    assert {f.rule_id for f in report.findings} == {"RET505"}


def test_score_is_findings_per_100_added_lines() -> None:
    text = textwrap.dedent(CASES["SIM103"])
    report = analyze_change("mod.py", "", text)
    assert report.added_lines == len(text.splitlines())
    assert report.score == pytest.approx(100 * len(report.findings) / report.added_lines)
    session = SlopSession()
    session.add(report)
    session.add(analyze_change("mod.py", text, text + "\nX = 1\n"))
    assert session.edits == 2 and session.findings == len(report.findings)
    assert session.score < report.score


def test_precise_rules_stay_quiet_on_good_code() -> None:
    good = """
        def parse(path, cache):
            # the cache key includes mtime so edits invalidate it
            key = (path, path.stat().st_mtime)
            if key in cache:
                return cache[key]
            try:
                data = path.read_text()
            except OSError:  # a file deleted between listing and reading is skipped
                pass
            else:
                cache[key] = data
                return data
            return None


        def nonempty(arr):
            return len(arr) > 0  # arr may be a numpy array: truthiness would be ambiguous
    """
    assert rules(good) == set()


def test_non_python_and_broken_files() -> None:
    assert analyze_change("README.md", "", "# Title\n\nText\n").findings == []
    broken = analyze_change("mod.py", "", "def f(:\n    pass\n")
    assert broken.findings == [] and broken.added_lines == 2


def test_added_line_numbers() -> None:
    assert added_line_numbers("a\nb\nc\n", "a\nx\nb\nc\ny\n") == {2, 5}
    assert added_line_numbers("", "a\nb\n") == {1, 2}


def test_comprehension_fix_keeps_the_filter_and_refuses_other_shapes() -> None:
    text = textwrap.dedent(CASES["PERF401"])
    [f] = [f for f in analyze_change("mod.py", "", text).findings if f.rule_id == "PERF401"]
    assert f.fix == "    names = [user.name.title() for user in users if user.active]\n"
    assert (f.fix_start, f.fix_end, f.fix_safe) == (3, 6, False)
    reads_itself = textwrap.dedent("""
        def dedupe(items):
            seen = []
            for item in items:
                if item not in seen:
                    seen.append(item)
            return seen
    """)
    found = [f for f in analyze_change("mod.py", "", reads_itself).findings
             if f.rule_id == "PERF401"]
    assert all(f.fix is None for f in found)
