"""The notebooks of docs/ run, and show what they say: each is executed on a fresh
kernel (nbclient), and what its cells print (text outputs: results' reprs, tables,
stdout) equals what the notebook keeps. A notebook gone stale:
``python -m tests.docs.test_notebooks`` executes them again and writes their outputs
(``make notebooks``)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

NOTEBOOKS = sorted((ROOT / "docs").glob("*.ipynb"))
#: Seconds one cell may take (a sweep on a busy machine).
CELL_TIMEOUT = 300


def executed(path: Path, folder: Path) -> Any:
    """The notebook at ``path``, executed in ``folder`` on a fresh Python kernel."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                   record_timing=False, resources={"metadata": {"path": str(folder)}}
                   ).execute()
    return notebook


def shown(notebook: Any) -> list[list[str]]:
    """What each code cell shows as text: results' and displays' text/plain, and stdout
    (not stderr: progress bars, which hold times)."""
    out = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        texts = []
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and output.name == "stdout":
                texts.append(output.text)
            elif output.output_type in ("execute_result", "display_data"):
                texts.append(output.get("data", {}).get("text/plain", ""))
            elif output.output_type == "error":
                texts.append(f"{output.ename}: {output.evalue}")
        out.append(texts)
    return out


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"first-learner.ipynb", "theorem-table.ipynb"}


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_a_notebook_runs_and_shows_what_it_keeps(path, tmp_path):
    pytest.importorskip("nbclient")
    pytest.importorskip("pandas")
    import nbformat

    kept = nbformat.read(path, as_version=4)
    ran = executed(path, tmp_path)  # (a cell that raises fails here: CellExecutionError)
    assert shown(ran) == shown(kept), (
        f"{path.name} is stale: python -m tests.docs.test_notebooks writes its outputs again")
    assert not list(tmp_path.iterdir()), "a notebook wrote into its working folder"


def test_the_comparison_sees_a_changed_number():
    import nbformat

    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    before = shown(notebook)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/plain" in data and "mistakes" in data["text/plain"]:
                data["text/plain"] = data["text/plain"].replace("6", "7")
    assert shown(notebook) != before


def main() -> None:
    """Execute every notebook and keep its outputs (``make notebooks``)."""
    import nbformat

    for path in NOTEBOOKS:
        with tempfile.TemporaryDirectory() as folder:
            notebook = executed(path, Path(folder))
        nbformat.write(notebook, path)
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
