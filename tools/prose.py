"""How long the sentences of a markdown file are: words a sentence, the share of long
sentences, parentheses per 100 words.

``python -m tools.prose FILE_OR_FOLDER ...`` prints one row per markdown file (a folder
stands for the ``.md`` files under it) and, below them, the targets: the figures of
websockets' own design documents, which issue 27 set as the bar. ``make docs`` prints it
after building the site. The figures inform; they fail no build.

What is measured is prose. Fenced code blocks, tables, headings, HTML comments and
link targets are skipped. An inline code span counts as one word. A paragraph or a list
item ends a sentence; inside one, a sentence ends at ``.``, ``!`` or ``?`` followed by a
space and a capital, a digit, a quote or a bracket. A parenthesis is one ``(`` of the
prose (not of code).

>>> text = '''# A title
...
... One short sentence. A second one (with an aside) follows it.
...
... ```python
... print("code (is skipped)")
... ```
...
... | a table | is skipped (too) |
... |---|---|
...
... - a list item ends a sentence
... - and so does `littlestone play` here
... '''
>>> figures = measure(text)
>>> figures.sentences, figures.words, figures.parentheses
(4, 22, 1)
>>> round(figures.words_per_sentence, 1), figures.over_30
(5.5, 0)
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

#: The figures issue 27 aims at: websockets' design documents, measured there.
TARGETS = {"words_per_sentence": 15.9, "share_over_30": 0.07, "parentheses_per_100": 0.3}
#: A sentence longer than this many words is a long one.
LONG_SENTENCE = 30

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[)\"'*_]*\s+(?=[A-Z0-9\"'`(\[*_])")
#: Abbreviations whose full stop ends no sentence (the field's citations: UML Thm. 21.3).
ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "Thm.", "Cor.", "Ex.", "Def.", "Fig.",
                 "Sec.", "Eq.", "No.", "p.", "pp.", "al.")
_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F\u0370-\u03FF][\w'’.+/-]*")


@dataclasses.dataclass
class Figures:
    """The counts of one text and the ratios the targets name."""

    words: int = 0
    sentences: int = 0
    over_30: int = 0
    parentheses: int = 0

    @property
    def words_per_sentence(self) -> float:
        return self.words / self.sentences if self.sentences else 0.0

    @property
    def share_over_30(self) -> float:
        return self.over_30 / self.sentences if self.sentences else 0.0

    @property
    def parentheses_per_100(self) -> float:
        return 100 * self.parentheses / self.words if self.words else 0.0

    def __add__(self, other: Figures) -> Figures:
        return Figures(self.words + other.words, self.sentences + other.sentences,
                       self.over_30 + other.over_30, self.parentheses + other.parentheses)


def blocks(text: str) -> Iterator[str]:
    """The prose blocks of a markdown text: paragraphs and list items, each on one line,
    without code, tables, headings, comments or admonition markers.

    >>> list(blocks("Some text\\nwraps here.\\n\\n- one\\n- two\\n\\n```\\nx = 1\\n```\\n"))
    ['Some text wraps here.', 'one', 'two']
    """
    text = _COMMENT.sub("", text)
    current: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            if current:
                yield " ".join(current)
                current = []
            continue
        stripped = line.strip()
        skipped = (fenced or stripped.startswith(("|", "#", "!!!", "???", ":::", "---", "--8<--",
                                                    "<"))
                   or (line.startswith("    ") and not current))  # an indented code block
        if skipped or not stripped:
            if current:
                yield " ".join(current)
                current = []
            continue
        if _ITEM.match(line):
            if current:
                yield " ".join(current)
            current = [_ITEM.sub("", line).strip()]
            continue
        current.append(stripped.lstrip("> ").strip())
    if current:
        yield " ".join(current)


def sentences(block: str) -> list[str]:
    """The sentences of one prose block.

    >>> sentences("UML Thm. 21.3 holds. It bounds mistakes, e.g. on thresholds. Done")
    ['UML Thm. 21.3 holds.', 'It bounds mistakes, e.g. on thresholds.', 'Done']
    """
    out: list[str] = []
    for piece in _SENTENCE_END.split(block):
        if out and out[-1].endswith(ABBREVIATIONS):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]


def measure(text: str) -> Figures:
    """The figures of a markdown text."""
    figures = Figures()
    for block in blocks(text):
        prose = _LINK.sub(lambda m: m.group(1) or m.group(2) or "", block)
        prose = _CODE_SPAN.sub(" CODE ", prose)  # a word that may start a sentence
        prose = _TAG.sub(" ", prose)
        figures.parentheses += prose.count("(")
        for sentence in sentences(prose):
            words = len(_WORD.findall(sentence))
            if words == 0:
                continue
            figures.words += words
            figures.sentences += 1
            figures.over_30 += words > LONG_SENTENCE
    return figures


def markdown_files(paths: Sequence[str]) -> list[Path]:
    """The files named, a folder standing for the ``.md`` files under it."""
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        out.extend(sorted(path.rglob("*.md")) if path.is_dir() else [path])
    return out


def table(rows: Sequence[tuple[str, Figures]]) -> list[str]:
    """The rows as the build prints them, then the total and the targets."""
    width = max([len("target (websockets)"), *(len(name) for name, _ in rows)])
    lines = [f"{'prose':<{width}}  {'words':>6}  {'words/sentence':>14}  "
             f"{'over 30 words':>13}  {'( per 100 words':>15}"]

    def line(name: str, f: Figures) -> str:
        return (f"{name:<{width}}  {f.words:>6}  {f.words_per_sentence:>14.1f}  "
                f"{f.share_over_30:>13.0%}  {f.parentheses_per_100:>15.1f}")

    lines += [line(name, figures) for name, figures in rows]
    if len(rows) > 1:
        total = Figures()
        for _, figures in rows:
            total += figures
        lines.append(line("all of the above", total))
    lines.append(f"{'target (websockets)':<{width}}  {'':>6}  "
                 f"{TARGETS['words_per_sentence']:>14.1f}  "
                 f"{TARGETS['share_over_30']:>13.0%}  {TARGETS['parentheses_per_100']:>15.1f}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.prose", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("paths", nargs="+", help="markdown files, or folders of them")
    args = parser.parse_args(argv)
    files = markdown_files(args.paths)
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f"prose: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = [(str(f), measure(f.read_text(encoding="utf-8"))) for f in files]
    rows = [(name, figures) for name, figures in rows if figures.words]  # no prose: no row
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
