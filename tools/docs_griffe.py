r"""A griffe extension: the package's reStructuredText docstrings, read as Markdown.

The docstrings are written for ``help()`` and doctest: Sphinx roles
(``:class:`Learner```), ``>>>`` examples, ``::`` literal blocks and simple tables.
mkdocstrings renders Markdown, where ``>>>`` is a quote. :func:`to_markdown` fences
the examples and the tables, drops the roles' markup and turns ``::`` into ``:``;
``mkdocs.yml`` loads :class:`MarkdownDocstrings` for the API reference.

>>> example = chr(62) * 3 + " 1 + 1\n2\n"  # a doctest, written so that this one runs
>>> to_markdown("Plays :class:`~a.Learner` agents::\n\n    x\n\n" + example).splitlines()
['Plays `Learner` agents:', '', '    x', '', '```pycon', '>>> 1 + 1', '2', '```']
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`]+)`")
_TABLE_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _role(match: re.Match[str]) -> str:
    """``:class:`~a.b.C``` as `C`, ``:func:`a.b.f``` as `a.b.f` (Sphinx's ``~``)."""
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def to_markdown(text: str) -> str:
    """A reStructuredText docstring as Markdown (see the module's docstring)."""
    text = _ROLE.sub(_role, text)
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent):] if lines[i].startswith(indent) else
                             lines[i].strip())
                i += 1
            if out and out[-1].strip():
                out.append("")
            out += [f"{indent}```pycon", *(f"{indent}{b}" for b in block), f"{indent}```"]
            continue
        if _TABLE_RULE.match(line):
            rules = 0
            block = []
            while i < len(lines):
                block.append(lines[i])
                rules += bool(_TABLE_RULE.match(lines[i]))
                i += 1
                if rules == 3:
                    break
            out += ["```text", *block, "```"]
            continue
        if line.rstrip().endswith("::"):
            line = line.rstrip()[:-1]  # "Check it::" -> "Check it:"
            if line.strip() == ":":
                line = ""
        out.append(line)
        i += 1
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


class MarkdownDocstrings(griffe.Extension):
    """Rewrite every docstring griffe loads as Markdown."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
