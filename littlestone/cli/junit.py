"""JUnit XML reports of ``check`` (``--junit-xml PATH``), for a course's CI: each check is
a test case, a failed one a ``<failure>``, a check not made a ``<skipped>``; advice
passes, its tip kept as the case's ``system-out``. (pytest and CI services read this
format; its schema is JUnit's, as pytest writes it.)

>>> import tempfile, pathlib, xml.etree.ElementTree as ET
>>> path = pathlib.Path(tempfile.mkdtemp()) / "check.xml"
>>> write_junit(path, "mine.py:Learner", [
...     {"check": "plays a game", "ok": False, "skipped": False, "advice": False,
...      "message": "crash at mine.py:9"},
...     {"check": "seeding", "ok": True, "skipped": True, "advice": False,
...      "message": "not checked"}])
>>> suite = ET.parse(path).getroot().find("testsuite")
>>> suite.get("tests"), suite.get("failures"), suite.get("skipped")
('2', '1', '1')
>>> suite.find("testcase/failure").get("message")
'crash at mine.py:9'
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from littlestone.games.errors import UsageError

__all__ = ["write_junit", "write_junit_for"]


def write_junit(path: str | Path, suite: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``rows`` (``check``'s: ``check``, ``ok``, ``skipped``, ``advice``,
    ``message``) as one JUnit test suite named ``suite``, to ``path`` (OSError as
    raised)."""
    failures = sum(1 for r in rows if not r["ok"] and not r["skipped"])
    skipped = sum(1 for r in rows if r["skipped"])
    root = ET.Element("testsuites")
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(rows)),
                         failures=str(failures), errors="0", skipped=str(skipped))
    for row in rows:
        case = ET.SubElement(node, "testcase", classname=suite, name=str(row["check"]))
        message = str(row.get("message") or "")
        if row["skipped"]:
            ET.SubElement(case, "skipped", message=message)
        elif not row["ok"]:
            ET.SubElement(case, "failure", message=message).text = message
        elif message:
            ET.SubElement(case, "system-out").text = message
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def write_junit_for(command: str, path: str | Path, suite: str,
                    rows: Sequence[Mapping[str, Any]]) -> None:
    """:func:`write_junit` for ``command``'s ``--junit-xml PATH``: a path it cannot
    write is the user's error, one line (:class:`UsageError`), not a traceback."""
    try:
        write_junit(path, suite, rows)
    except OSError as exc:
        raise UsageError(f"{command}: --junit-xml {path}: {exc.strerror or exc}") from None
