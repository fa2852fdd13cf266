"""The house: one installable package, the dependency arrows between its rooms, and
documents whose every link and file reference resolves inside a clone."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

import littlestone
from littlestone.cli import main

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("games", "learners", "adversaries", "protocol", "server")


def _package_files() -> list[Path]:
    """Every module of the package: all of them live under littlestone/."""
    return sorted((ROOT / "littlestone").rglob("*.py"))
DOCUMENTS = [ROOT / "README.md", ROOT / "PROTOCOL.md", ROOT / "SECURITY.md", ROOT / "CHANGELOG.md",
             *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "docs" / "manual").glob("*.md"))]


# -- the dependency arrows --------------------------------------------------------------
# import-linter holds them (``lint-imports`` in ``make lint``; the contracts are in
# pyproject.toml, docs/design.md section 2 draws them). These tests show that the
# contracts hold on the code and that they would catch a wrong import or a cycle.


def _contracts() -> list[Any]:
    from importlinter.application.use_cases import read_user_options
    from importlinter.configuration import configure
    from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
    from importlinter.contracts.layers import LayersContract

    configure()
    options = read_user_options(str(ROOT / "pyproject.toml"))
    kinds = {"layers": LayersContract, "acyclic_siblings": AcyclicSiblingsContract}
    return [kinds[c["type"]](name=c["name"], session_options=options.session_options,
                             contract_options=c) for c in options.contracts_options]


def _broken(extra: tuple[str, str] | None = None) -> list[str]:
    """The names of the contracts the package breaks, with ``extra`` (importer,
    imported) added to its import graph."""
    import copy

    import grimp

    graph = grimp.build_graph("littlestone")
    broken = []
    for contract in _contracts():
        checked = copy.deepcopy(graph)
        if extra is not None:
            checked.add_import(importer=extra[0], imported=extra[1], line_number=1,
                               line_contents="import")
        if not contract.check(checked, verbose=False).kept:
            broken.append(contract.name)
    return broken


def test_the_dependency_arrows_hold():
    """games imports nothing of ours; the agents and the protocol only games; the
    runners and the client sit below the server; inside the server each room imports
    only the rooms below it; no two modules of a package import each other."""
    assert _broken() == []


@pytest.mark.parametrize(("importer", "imported", "contract"), [
    ("littlestone.games.ldim", "littlestone.local", "The package's rooms, top to bottom"),
    ("littlestone.learners.halving", "littlestone.adversaries.base",
     "The package's rooms, top to bottom"),
    ("littlestone.client", "littlestone.server.net.server",
     "The package's rooms, top to bottom"),
    ("littlestone.server.records.store", "littlestone.server.net.server",
     "The server's rooms, top to bottom"),
    ("littlestone.server.records.folder", "littlestone.server.records.store",
     "No import cycles between the modules of any package"),
])
def test_the_contracts_catch_a_wrong_import(importer, imported, contract):
    """The contracts bite: one import against the arrows, or one that closes a cycle,
    breaks the contract named."""
    assert contract in _broken((importer, imported))


# -- one installable package ----------------------------------------------------------


def _source_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [f for f in listed if os.path.lexists(ROOT / f)]


@pytest.mark.slow
def test_the_wheel_installs_exactly_one_top_level_package(tmp_path):
    """Build the wheel from a copy of the source (not this checkout, which may hold
    build leftovers) and list what it would put into site-packages."""
    source = tmp_path / "src"
    for name in _source_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_symlink():
            target.symlink_to(os.readlink(ROOT / name))
        else:
            shutil.copy2(ROOT / name, target)
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(out), str(source)],
                   check=True, capture_output=True, text=True)
    (wheel,) = out.glob("littlestone-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"littlestone", f"littlestone-{littlestone.__version__}.dist-info"}, top
    for module in ("littlestone/__init__.py", "littlestone/__main__.py",
                   "littlestone/py.typed", "littlestone/games/ldim.py",
                   "littlestone/learners/base.py", "littlestone/adversaries/base.py",
                   "littlestone/protocol/codec.py", "littlestone/cli/__init__.py",
                   "littlestone/transport.py",
                   "littlestone/server/records/logs/reader.py",
                   "littlestone/server/tournament/run.py", "littlestone/client.py",
                   "littlestone/server/web/app.py",  # and the page's files, as package data
                   "littlestone/server/web/static/littlestone.js",
                   "littlestone/server/web/static/uPlot.iife.min.js",
                   "littlestone/server/web/static/uPlot.LICENSE",
                   "littlestone/server/web/static/play.js",
                   "littlestone/server/web/static/msgpack.min.js",
                   "littlestone/server/web/static/msgpack.LICENSE",
                   "littlestone/server/web/templates/base.html",  # and the templates
                   "littlestone/server/web/templates/game.html",
                   "littlestone/server/tournament/templates/report.html",
                   "littlestone/templates/curve.svg"):
        assert module in names, module
    assert not any(n.startswith("littlestone/tests") for n in names)
    entry = zipfile.ZipFile(wheel).read(
        f"littlestone-{littlestone.__version__}.dist-info/entry_points.txt").decode()
    assert "littlestone = littlestone.cli:main" in entry


@pytest.mark.slow
def test_version_and_help_from_the_command_line(tmp_path):
    """From another folder, so that only the installed package can answer."""
    version = subprocess.run([sys.executable, "-m", "littlestone", "--version"], cwd=tmp_path,
                             capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"littlestone {littlestone.__version__}"
    script = Path(sys.executable).with_name("littlestone")
    assert subprocess.run([str(script), "--version"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout.strip() == version.stdout.strip()
    helped = subprocess.run([sys.executable, "-m", "littlestone", "--help"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    for command in ("ldim", "play", "serve", "connect", "tournament", "check", "replay"):
        assert command in helped.stdout


@pytest.mark.slow
def test_a_students_own_protocol_module_does_not_shadow_ours(tmp_path):
    """The generic names that used to be top-level packages (protocol, server, ...) are
    the student's to use: a protocol.py beside their agent breaks nothing."""
    for name in FOLDERS:
        (tmp_path / f"{name}.py").write_text("raise ImportError('the student file')\n")
    agent = tmp_path / "agent.py"
    agent.write_text("from littlestone.learners.halving import Halving\n\n\n"
                     "class Mine(Halving):\n"
                     "    '''Halving, by a student.\n\n    >>> Mine().id\n    'halving'\n    '''\n")
    played = subprocess.run(
        [sys.executable, "-m", "littlestone", "play", "--learner", "agent.py:Mine",
         "--adversary", "random-target", "--class", "thresholds:n=15", "--rounds", "20",
         "--data", str(tmp_path / "data"), "--json"],
        cwd=tmp_path, capture_output=True, text=True)
    assert played.returncode == 0, played.stderr
    assert json.loads(played.stdout.splitlines()[-1])["status"] == "complete"


# -- one import name per file ---------------------------------------------------------

ONE_NAME = """
import importlib, json, os, pkgutil, sys
sys.path.insert(0, os.getcwd())
import littlestone
errors = {}
for module in pkgutil.walk_packages(littlestone.__path__, "littlestone.",
                                    onerror=lambda name: None):
    try:
        importlib.import_module(module.name)
    except ImportError as exc:  # an optional extra that is not installed
        errors[module.name] = str(exc)
others = []
for entry in sorted(os.listdir(".")):
    if entry != "littlestone" and os.path.isfile(os.path.join(entry, "__init__.py")):
        try:
            importlib.import_module(entry)
        except ImportError:
            continue
        others.append(entry)
files = {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if path:
        files.setdefault(os.path.realpath(path), []).append(name)
ours = os.path.realpath(".") + os.sep
print(json.dumps({"twice": {f: n for f, n in files.items() if len(n) > 1 and f.startswith(ours)},
                  "imported": sorted(n for n in sys.modules
                                     if n.partition(".")[0] == "littlestone"),
                  "others": others}))
"""


def test_no_module_imports_under_two_names():
    """Every file has one import name. The top-level folders of the design card's layout
    (games/, learners/, ...) are links into littlestone/ and refuse their own names; with
    the repository root on sys.path and every module of the package imported, no two
    module objects come from one file."""
    for folder in FOLDERS:
        assert (ROOT / folder).is_symlink(), folder
        assert (ROOT / folder).resolve() == ROOT / "littlestone" / folder
    done = subprocess.run([sys.executable, "-c", ONE_NAME], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    found = json.loads(done.stdout)
    assert found["twice"] == {}
    assert len(found["imported"]) == len(_package_files())
    # the root offers tests, benchmarks, tools and examples, none of them the package's
    assert not set(found["others"]) & set(FOLDERS)


def test_the_one_name_check_would_catch_a_second_name(tmp_path):
    """The check above can fail: a link without the guard is a second name."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "alias").symlink_to(tmp_path / "pkg")
    script = ("import json, os, sys; sys.path.insert(0, os.getcwd()); import pkg.mod, alias.mod;"
              "print(json.dumps([os.path.realpath(m.__file__) for m in "
              "(sys.modules['pkg.mod'], sys.modules['alias.mod'])]))")
    paths = json.loads(subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                                      capture_output=True, text=True, check=True).stdout)
    assert paths[0] == paths[1]
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run([sys.executable, "-c", "import games"], cwd=ROOT, check=True,
                       capture_output=True)


# -- the map ------------------------------------------------------------------------------

LAYOUT = ROOT / "docs" / "manual" / "layout.md"
#: A line of layout.md's tree: its indent (two spaces a level), then a folder (``net/``)
#: or a module (``lobby.py``), then what it holds.
TREE_ENTRY = re.compile(r"^(?P<indent> *)(?P<name>[\w.-]+(?:/|\.py))(?:\s|$)")
#: Modules the tree may leave out: every package has one, and says what it is itself.
OPTIONAL = ("__init__.py", "__main__.py")


def mapped_modules(tree: str) -> set[str]:
    r"""The modules a layout tree names, as paths from the repository root: a module's
    folder is the folder above it in the tree; only the tree under ``littlestone/`` maps
    the package (the other top-level lines are the repository's other folders).

    >>> sorted(mapped_modules("littlestone/  x\n  api.py  y\n  net/  z\n    lobby.py  w\n"
    ...                       "  local.py  v\ntools/  u\n  prose.py  t\n"))
    ['littlestone/api.py', 'littlestone/local.py', 'littlestone/net/lobby.py']
    """
    folders: list[str] = []
    named = set()
    for line in tree.splitlines():
        entry = TREE_ENTRY.match(line)
        if entry is None:
            continue
        depth, name = len(entry["indent"]) // 2, entry["name"]
        del folders[depth:]
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
        elif folders and folders[0] == "littlestone":
            named.add("/".join([*folders, name]))
    return named


def _layout_tree() -> str:
    """The first code block of layout.md: the tree."""
    match = re.search(r"^```\n(.*?)^```", LAYOUT.read_text(), re.S | re.M)
    assert match is not None, "docs/manual/layout.md has no tree"
    return match.group(1)


def test_the_layout_tree_names_every_module_and_only_those():
    """docs/manual/layout.md's tree is the package's map: every module has its line, in
    its folder, and no line names a module that is gone (a package's ``__init__.py`` and
    ``__main__.py`` may go unnamed)."""
    named = mapped_modules(_layout_tree())
    modules = {str(p.relative_to(ROOT)) for p in _package_files()}
    missing = sorted(m for m in modules - named if not m.endswith(OPTIONAL))
    gone = sorted(named - modules)
    assert not missing and not gone, (
        "docs/manual/layout.md's tree is out of date:\n"
        + "".join(f"  add a line for {m.rpartition('/')[2]} under {m.rpartition('/')[0]}/\n"
                  for m in missing)
        + "".join(f"  remove the line of {m.rpartition('/')[2]} under {m.rpartition('/')[0]}/"
                  " (no such module)\n" for m in gone))


def test_the_map_check_would_catch_a_missing_and_a_stale_line():
    """The check above can fail: a tree without lobby.py, or with a module that is gone."""
    tree = _layout_tree()
    assert "littlestone/server/net/lobby.py" not in mapped_modules(
        tree.replace("      lobby.py ", "      lobbyx.txt "))
    assert "littlestone/server/net/gone.py" in mapped_modules(
        tree.replace("      lobby.py ", "      gone.py "))


def test_the_benchmarks_import_each_other_one_way():
    """No two of the benchmarks import each other, directly or through others: a drawing
    of their imports is a tree, not a circle."""
    import grimp

    graph = grimp.build_graph("benchmarks", "littlestone")
    benches = sorted(m for m in graph.modules if m.startswith("benchmarks."))
    circles = [(a, b) for a in benches for b in benches if a < b
               and graph.chain_exists(importer=a, imported=b)
               and graph.chain_exists(importer=b, imported=a)]
    assert circles == []


# -- documents ------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
#: A path in backticks that names a file of the repository (``server/records/logs.py``).
FILE_REFERENCE = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|md|toml|png))(?::[\w.]+)?`")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a markdown file."""
    out = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            text = re.sub(r"[^\w\- ]", "", text)
            out.add(text.replace(" ", "-"))
    return out


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.name for d in DOCUMENTS])
def test_every_link_resolves_inside_the_clone(document):
    text = document.read_text()
    broken = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        file, _, anchor = target.partition("#")
        path = (document.parent / file).resolve() if file else document
        if not path.exists() or ROOT not in path.parents:
            broken.append(f"{target}: no such file in the clone")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no heading #{anchor}")
    for match in FILE_REFERENCE.finditer(text):
        name = match.group(1)
        if "/" not in name or name.startswith(("path/", "submissions/", "DIR/")):
            continue  # a bare file name or an example path in a command line
        if not ((ROOT / name).exists() or (document.parent / name).exists()):
            broken.append(f"`{name}`: no such file in the clone")
    assert not broken, "\n".join(broken)


def test_the_link_check_catches_a_link_out_of_the_clone(tmp_path):
    assert LINK.findall("see [design](../shared/DESIGN.md) and ![p](docs/x.png)") == [
        ("../shared/DESIGN.md", ""), ("", "docs/x.png")]
    assert "the-command-line" in _anchors(ROOT / "docs" / "manual" / "command-line.md")


def test_no_document_or_output_points_outside_the_repository(capsys):
    """No link to ../shared, no file name of the course material: sources are cited by
    their bibliographic names."""
    outside = re.compile(r"\.\./shared|seeds/\d|DESIGN\.md|THEORY\.md")
    texts = {str(d.relative_to(ROOT)): d.read_text() for d in DOCUMENTS}
    for path in _package_files():
        texts[str(path.relative_to(ROOT))] = path.read_text()
    for command in (["learners", "--json"], ["adversaries", "--json"], ["--help"]):
        with contextlib.suppress(SystemExit):
            main(command)
        texts[" ".join(command)] = capsys.readouterr().out
    hits = [f"{where}: {m.group(0)}" for where, text in texts.items()
            for m in outside.finditer(text)]
    assert not hits, hits


def test_every_test_docs_theory_names_exists():
    """docs/theory.md names the test that plays each row: each name is a test function
    (``*`` matches any ending) of the file named, in whichever room of tests/ it is."""
    text = (ROOT / "docs" / "theory.md").read_text()
    named = re.findall(r"`(test_\w+\.py)::([\w*]+)`", text)
    followers = re.findall(r"`(test_\w+\.py)::[\w*]+`((?:, `\w+`)+)", text)
    named += [(file, test) for file, tests in followers  # `file::a`, `b`: b in file too
              for test in re.findall(r"`(\w+)`", tests)]
    assert len(named) > 20
    missing = []
    for file, pattern in named:
        (path,) = (ROOT / "tests").rglob(file)  # a test file's name is its room's
        source = path.read_text()
        defined = re.findall(r"^(?:async )?def (test_\w+)", source, re.M)
        if not any(fnmatch.fnmatchcase(d, pattern) for d in defined):
            missing.append(f"{file}::{pattern}")
    assert not missing, missing
