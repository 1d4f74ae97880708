"""The decoding tests can fail: each mutation of `tests/mutations.py` breaks the model the way a real bug would, by
patching its objects in the test process, in its children and in the Hub remote-code copies it loads, and the
default (fast) tests of every file that claims to check that part must then fail.

Run with `pytest -m slow tests/test_mutations.py -s` to see which tests caught each mutation."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mutations import MUTATIONS, environment

ROOT = Path(__file__).resolve().parents[1]
# The files some mutation names, each run for every mutation, and what failed printed.
CHECKED_FILES = sorted({file for _, files in MUTATIONS.values() for file in files})


def failing_tests(mutation: str | None) -> dict[str, list[str]]:
    """Runs the checked files' default tests under `mutation` (None: none); returns the failing tests of each file."""
    env = environment(mutation)
    applied = subprocess.run(
        [sys.executable, "-c", "import hf_vanilla.modeling_vanilla as m; print(getattr(m, '__mutation__', None))"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert applied.stdout.strip() == str(mutation), f"the mutation was not applied: {applied.stderr[-2000:]}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfE",
            *(f"tests/{f}" for f in CHECKED_FILES),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    failed: dict[str, list[str]] = {file: [] for file in CHECKED_FILES}
    for match in re.finditer(r"^(?:FAILED|ERROR) tests/(\S+?\.py)::(\S+)", done.stdout, flags=re.MULTILINE):
        failed.setdefault(match.group(1), []).append(match.group(2))
    return failed


@pytest.mark.slow
def test_the_unmutated_run_passes_every_checked_file():
    """The control: what the mutations make fail passes when run the same way without them."""
    failed = failing_tests(None)
    assert not any(failed.values()), failed


@pytest.mark.slow
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_each_mutation_fails_the_tests_that_claim_to_check_it(mutation):
    must_catch = MUTATIONS[mutation][1]
    failed = failing_tests(mutation)
    print(f"\n{mutation}:")
    for file, tests in failed.items():
        print(f"  {file}: {len(tests)} failed: {', '.join(tests) or '-'}")
    missed = [file for file in must_catch if not failed.get(file)]
    assert not missed, f"{mutation}: no test failed in {missed}"
