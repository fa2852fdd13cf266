"""The documentation site's hook: reference tables made from the code, and the root
documents included without a copy.

``mkdocs.yml`` loads this file as a hook. A page of ``docs/`` asks for generated text
with an HTML comment on a line of its own:

- ``<!-- generated: cli -->``: every command and option of ``littlestone``, read from
  the argparse parser (``cli/parser.py``);
- ``<!-- generated: classes -->``, ``<!-- generated: learners -->``,
  ``<!-- generated: adversaries -->``: the registries ``CLASSES``, ``LEARNERS`` and
  ``ADVERSARIES``, with each entry's parameters, and for a learner the bound it prints
  on the sample games of :data:`SAMPLE_GAMES`;
- ``<!-- include: PROTOCOL.md -->``: a document of the repository's root, whose links
  are rewritten for its place in the site.

Links from any page to the root documents the site includes (``../PROTOCOL.md`` from
``docs/design.md``) are rewritten to their pages, so that the same markdown reads well
on a forge and in the site. ``tests/docs/test_docs.py`` checks the tables against the
registries.

>>> rewrite_links("See [the protocol](../PROTOCOL.md#1-transport).", "docs/design.md",
...               "design.md")
'See [the protocol](reference/protocol.md#1-transport).'
"""

from __future__ import annotations

import argparse
import contextlib
import os
import posixpath
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: The documents outside ``docs/`` that the site includes, and the page of each.
INCLUDED = {
    "PROTOCOL.md": "reference/protocol.md",
    "SECURITY.md": "reference/security.md",
    "benchmarks/README.md": "reference/benchmarks.md",
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
}

#: A small member of each class, for the example column of the class table. A class
#: added to ``CLASSES`` needs one here: the build says so.
SAMPLE_CLASSES = {
    "thresholds": "thresholds:n=15",
    "singletons": "singletons:n=8",
    "intervals": "intervals:n=8",
    "monotone-disjunctions": "monotone-disjunctions:n=4",
    "k-disjunctions": "k-disjunctions:n=6,k=2",
    "conjunctions": "conjunctions:n=3",
    "monotone-conjunctions": "monotone-conjunctions:n=4",
    "halfspaces": "halfspaces:d=3,margin=0.1",
    "matrix": "matrix:path={matrix}",
    "quadratic": "quadratic:n=8",
    "decision-trees": "decision-trees:d=3,leaves=4",
    "threshold-networks": "threshold-networks:n=2,hidden=2",
}

#: The games on which the learner table shows each learner's printed bound: (game,
#: class, free experts, adversary).
SAMPLE_GAMES: list[tuple[str, str | None, int | None, str]] = [
    ("mistake-bound", "thresholds:n=15", None, "random-target"),
    ("mistake-bound", "monotone-disjunctions:n=6", None, "random-target"),
    ("mistake-bound", "halfspaces:d=5,margin=0.2", None, "random-target"),
    ("mistake-bound", "halfspaces:d=5,margin=0.2,agnostic=true", None, "noisy-halfspace"),
    ("experts", None, 4, "random-costs"),
    ("experts", "thresholds:n=15", None, "noisy"),
]
#: The rounds of each sample game.
SAMPLE_ROUNDS = 40

_MARKER = re.compile(r"^<!-- (generated|include): ([\w./-]+) -->$", re.M)
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_FENCE = re.compile(r"^(```|~~~)", re.M)


# -- links ----------------------------------------------------------------------------


def rewrite_links(markdown: str, source: str, page: str) -> str:
    """The links of ``markdown``, written in the file ``source`` (a path from the
    repository's root), rewritten for the site's page ``page`` (a path under ``docs/``):
    a link to a file under ``docs/`` points to it from the page; one to an included
    root document points to its page. Code blocks and other links are left alone.

    >>> rewrite_links("[design](docs/design.md#2-architecture)", "PROTOCOL.md",
    ...               "reference/protocol.md")
    '[design](../design.md#2-architecture)'
    >>> rewrite_links("[web](https://example.org) [top](#top)", "README.md", "index.md")
    '[web](https://example.org) [top](#top)'
    """
    here = posixpath.dirname(source)
    page_dir = posixpath.dirname(page)

    def one(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"[a-z]+:", target) or target.startswith(("#", "/")):
            return match.group(0)
        file, hash_, anchor = target.partition("#")
        path = posixpath.normpath(posixpath.join(here, file))
        if path.startswith("docs/"):
            site = path.removeprefix("docs/")
        elif path in INCLUDED:
            site = INCLUDED[path]
        else:
            return match.group(0)
        relative = posixpath.relpath(site, page_dir or ".")
        return f"{match.group(1)}{relative}{hash_}{anchor}{match.group(3)}"

    parts = _FENCE.split(markdown)
    out, fenced = [], False
    for part in parts:
        if part in ("```", "~~~"):
            fenced = not fenced
            out.append(part)
        else:
            out.append(part if fenced else _LINK.sub(one, part))
    return "".join(out)


def include(name: str, page: str) -> str:
    """A root document's text for the site's page ``page``, its links rewritten."""
    if name not in INCLUDED:
        raise ValueError(f"{name} is not a document the site includes ({', '.join(INCLUDED)})")
    return rewrite_links((ROOT / name).read_text(encoding="utf-8"), name, page)


# -- the command line -----------------------------------------------------------------


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """An options table per argument group of ``parser``, SUPPRESSed options left out."""
    lines: list[str] = []
    for group in parser._action_groups:  # argparse keeps its groups private
        rows = []
        for action in group._group_actions:
            if action.help == argparse.SUPPRESS or isinstance(
                    action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
            takes = ""
            if action.nargs != 0:
                metavar = action.metavar or (action.dest.upper() if action.option_strings
                                             else action.dest)
                takes = f"`{' '.join(metavar) if isinstance(metavar, tuple) else metavar}`"
                if action.choices is not None and not action.metavar:
                    takes = " \\| ".join(f"`{c}`" for c in action.choices)
            default = action.default
            shown = ("" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0
                     else f"`{default}`")
            rows.append(f"| {names} | {takes} | {shown} | {_cell(action.help or '')} |")
        if rows:
            title = group.title or "options"
            lines += ["", f"*{title}*", "", "| option | takes | default | what it does |",
                      "|---|---|---|---|", *rows]
    return lines


def _commands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser,
                                                                   str]]:
    """(name, parser, one-line help) of every sub-command, nested ones included, hidden
    ones left out."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions
                 if choice.help != argparse.SUPPRESS}
        for name, sub in action.choices.items():
            if name not in helps:  # help=SUPPRESS: a tournament's own, not a user's
                continue
            yield name, sub, helps[name] or ""
            for nested, subsub, help_ in _commands(sub):
                yield f"{name} {nested}", subsub, help_


@contextlib.contextmanager
def _plain_environment() -> Iterator[None]:
    """Defaults as a fresh shell shows them (no ``$LITTLESTONE_DATA`` of the builder)."""
    saved = os.environ.pop("LITTLESTONE_DATA", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["LITTLESTONE_DATA"] = saved


def cli_reference() -> str:
    """Every command of ``littlestone``: its usage, what it does, its options."""
    from littlestone.cli.parser import build_parser

    with _plain_environment():
        parser = build_parser()
    commands = list(_commands(parser))
    lines = ["| command | what it does |", "|---|---|"]
    lines += [f"| [`littlestone {name}`](#littlestone-{name.replace(' ', '-')}) | "
              f"{_cell(help_)} |" for name, _, help_ in commands]
    for name, sub, help_ in commands:
        usage = sub.format_usage().removeprefix("usage: ").rstrip()
        lines += ["", f"## littlestone {name}", "", f"{_cell(sub.description or help_)}",
                  "", "```text", usage, "```"]
        lines += _options(sub)
    return "\n".join(lines)


# -- the registries -------------------------------------------------------------------


def _parameters(cls: Any) -> str:
    params = cls.param_info()
    if not params:
        return "none"
    return ", ".join(f"`{p.name}={_default(p.default)}`" if p.default is not None
                     else f"`{p.name}`" for p in params)


def _default(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _games(cls: Any) -> str:
    return ", ".join(sorted(cls.games))


def learner_table() -> str:
    """Every registered learner: games, parameters, what it does, the bound it prints."""
    from littlestone.learners import LEARNERS

    lines = ["| learner | games | parameters | what it does | bound printed (sample game) |",
             "|---|---|---|---|---|"]
    for agent_id in LEARNERS.ids():
        cls = LEARNERS[agent_id]
        bounds = "; ".join(f"{name} ({where})" for name, where in _bounds(agent_id)) or "none"
        lines.append(f"| `{agent_id}` | {_games(cls)} | {_parameters(cls)} | "
                     f"{_cell(cls.describe())} | {_cell(bounds)} |")
    return "\n".join(lines)


def _bounds(agent_id: str) -> list[tuple[str, str]]:
    """The distinct bounds ``agent_id`` prints on the sample games, each with the first
    sample game that prints it."""
    from littlestone.adversaries import ADVERSARIES
    from littlestone.games.classes import make_class
    from littlestone.games.game import GameSpec
    from littlestone.learners import LEARNERS
    from littlestone.local import play

    seen: dict[str, tuple[str, str]] = {}
    for game, spec, experts, adversary_id in SAMPLE_GAMES:
        hclass = make_class(spec) if spec else None
        sample = GameSpec(game, SAMPLE_ROUNDS, hclass, experts)
        learner, adversary = LEARNERS.make(agent_id), ADVERSARIES.make(adversary_id)
        if learner.unsupported(sample) or adversary.unsupported(sample):
            continue
        result = play(sample, learner, adversary, seed=1)
        if result.bound is None:
            continue
        formula = re.sub(r"[=<>]\s*[0-9][0-9.e+-]*", "", result.bound.name)  # no values
        if formula not in seen:
            seen[formula] = (result.bound.name,
                             f"{game}, {spec or f'{experts} free experts'}")
    return list(seen.values())


def adversary_table() -> str:
    """Every registered adversary: games, parameters, what it does or forces."""
    import littlestone.server.records.replay  # noqa: F401 - registers the replay adversary
    from littlestone.adversaries import ADVERSARIES

    lines = ["| adversary | games | parameters | what it does or forces |", "|---|---|---|---|"]
    for agent_id in ADVERSARIES.ids():
        cls = ADVERSARIES[agent_id]
        lines.append(f"| `{agent_id}` | {_games(cls)} | {_parameters(cls)} | "
                     f"{_cell(cls.describe())} |")
    return "\n".join(lines)


def _class_parameters(name: str, spec: str) -> list[str]:
    """The parameters the class ``name`` asks its spec for, as they are read."""
    from littlestone.games.classes import CLASSES, UNLIMITED
    from littlestone.games.spec import Params, parse_spec

    asked: list[str] = []
    given: dict[object, str] = {}  # a value read, by the parameter that gave it

    class Recording(Params):
        def int(self, key: str, default: int | None = None, **limits: Any) -> int:
            # a limit that is an earlier parameter's value is shown as its name (k <= n)
            named = {k: given.get(v, v) for k, v in limits.items()}
            asked.append(_described(key, "int", default, named))
            value = super().int(key, default, **limits)
            given.setdefault(value, key)
            return value

        def float(self, key: str, default: float | None = None, **limits: Any) -> float:
            asked.append(_described(key, "float", default, limits))
            return super().float(key, default, **limits)

        def bool(self, key: str, default: bool = False) -> bool:
            asked.append(_described(key, "bool", default, {}))
            return super().bool(key, default)

        def str(self, key: str, default: str | None = None) -> str:
            asked.append(_described(key, "str", default, {}))
            return super().str(key, default)

    _, raw = parse_spec(spec)
    CLASSES[name](Recording(name, raw), UNLIMITED)
    return asked


def _described(key: str, kind: str, default: object, limits: dict[str, Any]) -> str:
    low, high = limits.get("minimum"), limits.get("maximum")
    text = f"`{key}` ({kind}"
    if low is not None or high is not None:
        text += f", {'' if low is None else low}..{'' if high is None else high}"
    if default is not None:
        text += f", default {_default(default)}"
    return text + ")"


def class_table() -> str:
    """Every class of ``CLASSES``: parameters, hypotheses, and a sample's size and Ldim."""
    from littlestone.games.classes import CLASSES, FiniteClass, make_class
    from littlestone.games.ldim import class_ldim

    missing = sorted(set(CLASSES) - set(SAMPLE_CLASSES))
    if missing:
        raise ValueError(f"tools/docs_site.py: SAMPLE_CLASSES has no sample of "
                         f"{', '.join(missing)}: add one")
    lines = ["| class | parameters | hypotheses | sample | size | Ldim of the sample |",
             "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as folder:
        matrix = Path(folder) / "identity.csv"
        matrix.write_text("1,0,0\n0,1,0\n0,0,1\n")
        for name in CLASSES:
            spec = SAMPLE_CLASSES[name].format(matrix=matrix)
            hclass = make_class(spec)
            shown = spec.replace(str(matrix), "FILE.csv")
            doc = (type(hclass).__doc__ or "").strip().split("\n\n")[0]
            if isinstance(hclass, FiniteClass):
                ldim, method = class_ldim(hclass)
                size, dim = str(hclass.size), f"{ldim} ({method})"
            else:
                size, dim = "infinite", "infinite"
            lines.append(f"| `{name}` | {', '.join(_class_parameters(name, spec))} | "
                         f"{_cell(' '.join(doc.split()))} | `{shown}` | {size} | {dim} |")
    return "\n".join(lines)


GENERATED = {"cli": cli_reference, "classes": class_table, "learners": learner_table,
             "adversaries": adversary_table}


def expand(markdown: str, page: str) -> str:
    """``markdown`` of the page ``page`` with its markers replaced."""

    def one(match: re.Match[str]) -> str:
        kind, name = match.groups()
        if kind == "include":
            return include(name, page)
        if name not in GENERATED:
            raise ValueError(f"{page}: no generated text named {name!r} "
                             f"(known: {', '.join(GENERATED)})")
        return GENERATED[name]()

    return _MARKER.sub(one, markdown)


# -- the hook -------------------------------------------------------------------------


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: expand the markers, then rewrite the links of a page of ``docs/``."""
    src = page.file.src_uri
    return rewrite_links(expand(markdown, src), f"docs/{src}", src)
