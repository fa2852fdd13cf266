"""``ls.sweep`` in a plain script, as a researcher writes one first (issue 44): without
``if __name__ == "__main__":`` it raised BrokenProcessPool (each worker ran the script
again), and through ``python -`` it failed on ``'<stdin>'``."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """import littlestone as ls
print("SCRIPT RAN")
table = ls.sweep(["halving", "soa"], ["random-target"], ["thresholds:n=15"], rounds=[10],
                 seeds=2, workers=2, progress=False)
print("ROWS", len(table))
"""


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_sweep_in_a_script_without_a_main_guard_runs_once_on_its_workers(tmp_path, how):
    (tmp_path / "plain.py").write_text(SCRIPT)
    argv = [sys.executable, "plain.py"] if how == "file" else [sys.executable, "-"]
    ran = subprocess.run(argv, input=SCRIPT if how == "stdin" else None, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split("\n")[:2] == ["SCRIPT RAN", "ROWS 4"], ran.stdout
