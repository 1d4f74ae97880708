"""The benchmarks refuse a count flag under its smallest value in one line, before any work
(`benchmarks/flag_checks.py`)."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(
    "script, flags, message",
    [
        ("compare_marian.py", ["--repeats", "0"], "--repeats must be at least 1, got 0"),
        ("compare_marian.py", ["--vocab-size", "3"], "--vocab-size must be at least 4, got 3"),
        ("loss_curves.py", ["--max-length", "7"], "--max-length must be at least 8, got 7"),
        ("loss_curves.py", ["--every", "0"], "--every must be at least 1, got 0"),
        ("pointer_generator_speed.py", ["--repeats", "-1"], "--repeats must be at least 1, got -1"),
    ],
)
def test_a_count_under_its_least_is_refused_in_one_line(script, flags, message):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *flags], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == f"{script}: error: {message}"
