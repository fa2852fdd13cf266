"""What a sandboxed run printed, as the host reads it (:func:`.sandbox.printed_json`): the
last line that reads as JSON, a line nested past :data:`.host.PRINTED_DEPTH` skipped
before it is parsed.

The flake these keep away (``test_sandbox.py::test_a_probe_line_that_breaks_json_is_skipped``,
once in a parallel ``make test``): the probe's answer and ``check``'s report were read
with ``json.loads`` on every line, and a hostile line of 60000 brackets took the
stack of the test's process to Python's recursion limit before its RecursionError was
caught. ``json`` allocates a list a level, so a garbage collection may start there, and
run the finalizers of whatever an earlier test in the same worker had left in a cycle
(a generator, a transport, an object with ``__del__``) with no stack left: the
finalizer raised, and pytest's unraisable-exception hook, formatting that exception,
hit a RecursionError of its own and failed the test."""

from __future__ import annotations

import gc
import json

import pytest

from littlestone.sandbox import printed_json
from littlestone.sandbox.host import PRINTED_DEPTH, nesting
from littlestone.server.tournament.preflight import _own_report

#: A line as a hostile submission prints it: nested far past Python's recursion limit.
DEEP = "[" * 60000 + "]" * 60000
#: How many Python calls a finalizer or a hook may need (formatting a traceback).
ROOM = 100


def _down(calls: int) -> None:
    if calls:
        _down(calls - 1)


def _has_room(calls: int) -> bool:
    """Whether the stack has room here for ``calls`` more Python calls."""
    try:
        _down(calls)
    except RecursionError:
        return False
    return True


def test_a_line_nested_past_the_limit_is_never_parsed(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    parsed: list[int] = []
    loads = json.loads

    def counted(line: str) -> object:
        parsed.append(len(line))
        return loads(line)

    monkeypatch.setattr(json, "loads", counted)
    out = '{"ok": true, "unsupported": [null]}\nhello\n' + DEEP + "\n"
    assert list(printed_json(out)) == [{"ok": True, "unsupported": [None]}]
    assert len(DEEP) not in parsed


def test_the_depth_limit_is_read_on_both_sides() -> None:
    at_limit = "[" * PRINTED_DEPTH + "]" * PRINTED_DEPTH
    past = "[" + at_limit + "]"
    assert nesting(at_limit) == PRINTED_DEPTH and nesting(past) == PRINTED_DEPTH + 1
    assert list(printed_json(f"{past}\n{at_limit}\n{past}")) == [json.loads(at_limit)]


def test_brackets_in_strings_do_not_count() -> None:
    line = json.dumps({"said": "[[[{{{ \\\" ]]]", "rows": [{"check": "a \" ["}]})
    assert nesting(line) == 3
    assert next(printed_json(line)) == json.loads(line)


def test_no_garbage_collection_starts_near_the_stack_limit_while_a_run_is_read() -> None:
    """Every collection that starts while ``check``'s report is read (a collection at
    every allocation) has room for a finalizer that raises and the hook that formats
    it; reading the deep line with ``json.loads`` left none."""
    rooms: list[bool] = []

    def started(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            rooms.append(_has_room(ROOM))

    report = {"agent": "a.py:A", "kind": "learner",
              "checks": [{"check": "plays a game", "ok": True}]}
    out = f"{json.dumps(report)}\n{DEEP}\n"
    threshold = gc.get_threshold()
    gc.callbacks.append(started)
    gc.set_threshold(1)
    try:
        assert _own_report(out) == report
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(started)
    assert rooms and all(rooms), f"{rooms.count(False)} of {len(rooms)} without room"
