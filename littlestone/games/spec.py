"""Spec strings: ``NAME:key=value,key=value``.

Hypothesis classes, learners and adversaries are all named this way on the command
line, in tournament files and on the wire::

    thresholds:n=1023
    halfspaces:d=100,margin=0.1
    perceptron:normalize=true

Values may not contain ``,`` or ``=`` (a matrix file's path among them); a spec without
``:`` has no parameters.

>>> parse_spec("k-disjunctions:n=10,k=2")
('k-disjunctions', {'n': '10', 'k': '2'})
>>> p = Params("thresholds", {"n": "7"})
>>> p.int("n", minimum=1)
7
>>> p.finish()
>>> Params("thresholds", {"n": "seven"}).int("n")
Traceback (most recent call last):
...
littlestone.games.errors.SpecError: thresholds: parameter n='seven' is not an integer
"""

from __future__ import annotations

import builtins
import re

from littlestone.games.errors import SpecError

__all__ = ["Params", "format_spec", "parse_bool", "parse_spec"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def parse_spec(text: str) -> tuple[str, dict[str, str]]:
    """Split ``NAME:key=value,...`` into the name and its raw string parameters."""
    text = text.strip()
    name, _, rest = text.partition(":")
    if not name:
        raise SpecError(f"empty name in spec {text!r}")
    if not _NAME.match(name):
        raise SpecError(f"bad name {name!r} in spec {text!r}")
    params: dict[str, str] = {}
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not _KEY.match(key):
                raise SpecError(f"bad parameter {item!r} in spec {text!r} (expected key=value)")
            if key in params:
                raise SpecError(f"parameter {key!r} given twice in spec {text!r}")
            params[key] = value.strip()
    return name, params


def format_spec(name: str, params: dict[str, object]) -> str:
    """The canonical spec string: parameters in the given order.

    >>> format_spec("halfspaces", {"d": 3, "margin": 0.1})
    'halfspaces:d=3,margin=0.1'
    """
    if not params:
        return name
    return name + ":" + ",".join(f"{k}={_format_value(v)}" for k, v in params.items())


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_bool(value: str) -> bool:
    """``true/false``, ``yes/no``, ``1/0``, ``on/off`` (any case)."""
    low = value.strip().lower()
    if low in ("true", "yes", "1", "on"):
        return True
    if low in ("false", "no", "0", "off"):
        return False
    raise ValueError(value)


class Params:
    """Typed access to a spec's raw parameters; :meth:`finish` rejects unknown keys."""

    def __init__(self, owner: str, raw: dict[str, str]) -> None:
        self.owner = owner
        self.raw = dict(raw)
        self._used: set[str] = set()

    def _get(self, key: str) -> str | None:
        self._used.add(key)
        return self.raw.get(key)

    def _missing(self, key: str) -> SpecError:
        """A required parameter is missing; the message names what was given instead
        (``thresholds:m=3``: a misspelt ``n``)."""
        given = ", ".join(f"{k}={v}" for k, v in self.raw.items() if k != key)
        return SpecError(f"{self.owner}: missing parameter {key}"
                         + (f" (given: {given})" if given else ""))

    def _fail(self, key: str, value: str, what: str) -> SpecError:
        return SpecError(f"{self.owner}: parameter {key}={value!r} {what}")

    def int(
        self, key: str, default: int | None = None, *, minimum: int | None = None,
        maximum: int | None = None,
    ) -> int:
        """An integer parameter within ``[minimum, maximum]``; required when no default."""
        value = self._get(key)
        if value is None:
            if default is None:
                raise self._missing(key)
            return default
        try:
            number = int(value)
        except ValueError:
            raise self._fail(key, value, "is not an integer") from None
        if minimum is not None and number < minimum:
            raise self._fail(key, value, f"must be at least {minimum}")
        if maximum is not None and number > maximum:
            raise self._fail(key, value, f"must be at most {maximum}")
        return number

    def float(
        self, key: str, default: float | None = None, *, minimum: float | None = None,
        maximum: float | None = None, strict_minimum: bool = False,
    ) -> float:
        """A finite float parameter within bounds; required when no default."""
        value = self._get(key)
        if value is None:
            if default is None:
                raise self._missing(key)
            return default
        try:
            number = float(value)
        except ValueError:
            raise self._fail(key, value, "is not a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise self._fail(key, value, "must be finite")
        if minimum is not None and (number < minimum or (strict_minimum and number == minimum)):
            raise self._fail(key, value, f"must be {'>' if strict_minimum else '>='} {minimum}")
        if maximum is not None and number > maximum:
            raise self._fail(key, value, f"must be at most {maximum}")
        return number

    def bool(self, key: str, default: builtins.bool = False) -> builtins.bool:
        """A boolean parameter (:func:`parse_bool`'s spellings)."""
        value = self._get(key)
        if value is None:
            return default
        try:
            return parse_bool(value)
        except ValueError:
            raise self._fail(key, value, "is not true or false") from None

    def str(self, key: str, default: str | None = None) -> str:
        """A string parameter; required when no default."""
        value = self._get(key)
        if value is None or value == "":
            if default is None:
                raise self._missing(key)
            return default
        return value

    def spec(self) -> builtins.str:
        """The spec these parameters came from, as given (for messages)."""
        return format_spec(self.owner, dict(self.raw))

    def finish(self) -> None:
        """Raise :class:`SpecError` naming any parameter nobody asked for."""
        unknown = sorted(set(self.raw) - self._used)
        if unknown:
            known = ", ".join(sorted(self._used)) or "none"
            raise SpecError(
                f"{self.owner}: unknown parameter {', '.join(unknown)} (known: {known})"
            )
