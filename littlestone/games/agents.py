"""What learners and adversaries share: parameters, specs, registries, agent files.

An agent's parameters are the keyword arguments of its ``__init__``, typed with
``int``, ``float``, ``bool`` or ``str`` (or ``... | None``), and kept as attributes
of the same names (as River and scikit-learn do), so that :meth:`Agent.params` and
:meth:`Agent.clone` need nothing more. A spec names a registered agent with its
parameters, ``perceptron:normalize=true``, or a class in a Python file,
``path/to/file.py:ClassName`` (optionally followed by ``:key=value,...``).

>>> class Echo(Agent):
...     '''Says what it is told.'''
...     id = "echo"
...     def __init__(self, loud: bool = False, times: int = 1) -> None:
...         self.loud, self.times = loud, times
>>> registry = Registry("echo agent", Agent)
>>> _ = registry.register(Echo)
>>> agent = registry.make("echo:times=3")
>>> agent.spec, agent.params()
('echo:loud=false,times=3', {'loud': False, 'times': 3})
>>> registry.make("echo:volume=11")
Traceback (most recent call last):
...
littlestone.games.errors.SpecError: echo: unknown parameter 'volume' (parameters: loud, times)
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from littlestone.games.errors import SpecError
from littlestone.games.spec import format_spec, parse_bool, parse_spec

__all__ = ["Agent", "ParamInfo", "Registry", "load_agent_file"]


class ParamInfo(typing.NamedTuple):
    """One parameter of an agent, for listings and for parsing specs."""

    name: str
    type: type
    default: Any
    optional: bool


class Agent:
    """Common base of learners and adversaries."""

    #: Stable registry id, used in specs (``halving``, ``random-target`` ...).
    id: ClassVar[str] = ""
    #: The games the agent plays: a subset of ``{"mistake-bound", "experts"}``.
    games: ClassVar[frozenset[str]] = frozenset()
    #: Whether the agent's moves are a function of what it has seen (no coin of its own).
    deterministic: ClassVar[bool] = True
    #: The parameters that name files: a server refuses a spec that sets any of them.
    file_params: ClassVar[frozenset[str]] = frozenset()
    #: Whether a server builds this agent for a peer that names it (not an agent that
    #: imports code by name or reads logs).
    served: ClassVar[bool] = True
    #: Whether one move may take long (exact Ldim): a server then makes it in a worker
    #: thread, never on its event loop.
    slow_moves: ClassVar[bool] = False

    @classmethod
    def describe(cls) -> str:
        """The first sentence of the class docstring, on one line."""
        paragraph = (inspect.getdoc(cls) or cls.__name__).strip().split("\n\n")[0]
        text = " ".join(paragraph.split())
        end = re.search(r"\.\s+(?=[A-Z`])", text)  # a full stop before a new sentence
        return text if end is None else text[: end.start() + 1]

    @classmethod
    @functools.cache
    def param_info(cls) -> tuple[ParamInfo, ...]:
        """The parameters of ``__init__`` with their types and defaults (read once a
        class: every game asks for an agent's spec)."""
        signature = inspect.signature(cls.__init__)
        try:
            hints = typing.get_type_hints(cls.__init__)
        except Exception:  # unresolvable annotations in a student's file: treat as str
            hints = {}
        out = []
        for name, param in list(signature.parameters.items())[1:]:
            if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                continue
            base, optional = _base_type(hints.get(name, str))
            default = None if param.default is param.empty else param.default
            out.append(ParamInfo(name, base, default, optional or param.default is None))
        return tuple(out)

    @classmethod
    def example(cls) -> Agent:
        """An instance for the generic check suite: the defaults, unless overridden."""
        return cls()

    # (an agent's own parameters: each its own type)
    def params(self) -> dict[str, Any]:
        """Current parameter values (read from the attributes named like the parameters)."""
        return {p.name: getattr(self, p.name, p.default) for p in self.param_info()}

    @property
    def spec(self) -> str:
        """The spec that rebuilds this agent."""
        shown = {k: v for k, v in self.params().items() if v is not None}
        return format_spec(self.id or type(self).__name__, shown)

    def clone(self) -> Agent:
        """A fresh agent with the same parameters."""
        return type(self)(**self.params())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


def _base_type(hint: Any) -> tuple[type, bool]:
    """(int | float | bool | str, optional?) of an annotation."""
    optional = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else str
    return (hint if hint in (int, float, bool, str) else str), optional


def _convert(owner: str, info: ParamInfo, raw: str) -> Any:
    if info.optional and raw.lower() in ("none", ""):
        return None
    try:
        if info.type is bool:
            return parse_bool(raw)
        if info.type is int:
            return int(raw)
        if info.type is float:
            return float(raw)
    except ValueError:
        kind = {bool: "true or false", int: "an integer", float: "a number"}[info.type]
        raise SpecError(f"{owner}: parameter {info.name}={raw!r} must be {kind}") from None
    return raw


A = TypeVar("A", bound=Agent)


class Registry(Generic[A]):
    """Agents of one family (learners or adversaries) by id; builds them from specs.

    >>> from littlestone.learners import LEARNERS
    >>> "halving" in LEARNERS, LEARNERS.make("hedge:eta=0.5").params()["eta"]
    (True, 0.5)
    """

    def __init__(self, kind: str, base: type[A]) -> None:
        self.kind = kind
        self.base = base
        self._agents: dict[str, type[A]] = {}

    def register(self, cls: type[A]) -> type[A]:
        """Class decorator: register ``cls`` under ``cls.id``."""
        if not cls.id or cls.id in self._agents:
            raise ValueError(f"{self.kind} id {cls.id!r} is empty or taken")
        self._agents[cls.id] = cls
        return cls

    def ids(self) -> list[str]:
        return sorted(self._agents)

    def __getitem__(self, agent_id: str) -> type[A]:
        return self._agents[agent_id]

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._agents

    def make(self, spec: str) -> A:
        """Build an agent from ``id:key=value,...`` or ``path/file.py:Class[:key=value,...]``."""
        spec = spec.strip()
        if ".py:" in spec or spec.endswith(".py"):
            path, _, rest = spec.partition(".py:")
            class_name, _, raw_params = rest.partition(":")
            cls = load_agent_file(path + ".py", class_name, self.base, self.kind)
            _, raw = parse_spec(f"x:{raw_params}")
            owner = f"{path}.py:{class_name}"
        else:
            name, _, rest = spec.partition(":")
            positional = getattr(self._agents.get(name), "positional", None)
            first = rest.split(",", 1)[0]
            if positional and first and "=" not in first:  # river:linear_model.Perceptron
                spec = f"{name}:{positional}={rest}"
            name, raw = parse_spec(spec)
            if name not in self._agents:
                raise SpecError(f"unknown {self.kind} {name!r} (known: {', '.join(self.ids())})")
            cls, owner = self._agents[name], name
        # (read only when asked: its type hints cost a game's process a millisecond)
        infos = {p.name: p for p in cls.param_info()} if raw else {}
        kwargs = {}
        for key, value in raw.items():
            if key not in infos:
                known = ", ".join(infos) or "none"
                raise SpecError(f"{owner}: unknown parameter {key!r} (parameters: {known})")
            kwargs[key] = _convert(owner, infos[key], value)
        try:
            return cls(**kwargs)
        except SpecError:
            raise
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{owner}: {exc}") from None


def load_agent_file(path: str, class_name: str, base: type[A], kind: str) -> type[A]:
    """Import ``class_name`` from the Python file at ``path``; it must subclass ``base``."""
    file = Path(path)
    if not class_name:
        raise SpecError(f"agent file {path!r}: name the class, as {path}:ClassName")
    if not file.is_file():
        raise SpecError(f"agent file {path!r} does not exist")
    digest = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]
    module_name = f"littlestone_agent_{file.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(module_name, file)
    if module_spec is None or module_spec.loader is None:
        raise SpecError(f"agent file {path!r} cannot be imported")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # the file is the user's: any error becomes one line
        sys.modules.pop(module_name, None)
        if isinstance(exc, SyntaxError):
            where = f" (line {exc.lineno})"
        else:
            from littlestone.games.errors import where_raised

            where = f" at {where_raised(exc)}"
        raise SpecError(f"agent file {path!r} failed to import{where}: "
                        f"{type(exc).__name__}: {exc}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise SpecError(f"agent file {path!r} has no class {class_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, base)):
        article = "an" if kind[:1] in "aeiou" else "a"
        raise SpecError(f"{path}:{class_name} is not {article} {kind}: subclass "
                        f"{base.__module__.rsplit('.', 1)[0]}.{base.__name__}")
    return cls
