"""One exception tree in one module: every exception class of the package is defined in
:mod:`littlestone.games.errors`, under :class:`~littlestone.LittlestoneError`, but the
signals that must pass an agent's ``except Exception`` (no :class:`Exception` at all);
and its docstring draws every one of them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import littlestone
from littlestone.games import errors
from littlestone.games.errors import LittlestoneError


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class that a module of the package defines or holds, by
    ``MODULE.NAME`` of its definition."""
    found: dict[str, type[BaseException]] = {}
    for module in pkgutil.walk_packages(littlestone.__path__, "littlestone."):
        loaded = importlib.import_module(module.name)
        for value in vars(loaded).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and (
                    value.__module__.startswith("littlestone")):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_exception_is_in_the_tree_and_in_its_module():
    classes = _exception_classes()
    assert len(classes) >= 39
    elsewhere = sorted(name for name, cls in classes.items()
                       if cls.__module__ != errors.__name__)
    assert elsewhere == []
    outside = sorted(name for name, cls in classes.items()
                     if issubclass(cls, Exception) and not issubclass(cls, LittlestoneError))
    assert outside == []


def test_the_signals_are_no_exceptions():
    """Those outside the tree pass an ``except Exception``; nothing else is outside."""
    signals = {cls.__name__ for cls in _exception_classes().values()
               if not issubclass(cls, LittlestoneError)}
    assert signals == {"CpuSpent", "RecordDiffers", "Terminated"}
    assert not any(issubclass(getattr(errors, name), Exception) for name in signals)


def test_the_docstring_draws_every_exception():
    drawn = errors.__doc__ or ""
    missing = sorted(name for name, value in vars(errors).items()
                     if inspect.isclass(value) and issubclass(value, BaseException)
                     and f"── {name}" not in drawn and name != "LittlestoneError")
    assert missing == []


def test_the_builtin_mixins_hold():
    """Callers that catch a built-in keep catching ours."""
    assert issubclass(errors.SpecError, ValueError)
    assert issubclass(errors.ArgumentError, TypeError)
    assert issubclass(errors.TokenError, ValueError)
    assert issubclass(errors.SandboxError, OSError)
    assert issubclass(errors.MissingDependency, ImportError)
    assert issubclass(errors.Advice, AssertionError)
    assert issubclass(errors.Terminated, KeyboardInterrupt)
