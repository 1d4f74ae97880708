"""The decoding tests can fail: each mutation breaks the model the way a real bug would, and the default (fast) tests
of every file that claims to check that part must then fail.

A mutation replaces functions of `modeling_vanilla` by mutated versions of themselves (their source parsed, an
anchor statement, expression or keyword swapped, recompiled; tests/mutation_site/hf_vanilla_mutations.py), so a
reformatted model file keeps every mutation. The test files run in a pytest subprocess whose PYTHONPATH starts with
tests/mutation_site: its `sitecustomize` mutates hf_vanilla.modeling_vanilla when imported, and every copy that
transformers loads as remote code, in that process and the processes it starts (test_remote_code's loader drops
PYTHONPATH; the mutation puts it back). Each process logs the modules it mutated: a run that mutated nothing fails.

Run with `pytest -m slow tests/test_mutations.py -s` to see which tests caught each mutation."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "mutation_site"))

import hf_vanilla_mutations  # noqa: E402 (from the folder above)

# Every test file that compares decodings: hf_vanilla's own, against MarianMTModel and CTranslate2, as remote code.
ALL_DECODING_FILES = [
    "test_modeling.py",
    "test_marian_equivalence.py",
    "test_remote_code.py",
    "test_convert.py",
    "test_ct2.py",
]
# name (a key of hf_vanilla_mutations.MUTATIONS): the test files that must catch it
MUST_CATCH = {
    "the self-attention cache ignores its past": ALL_DECODING_FILES,
    "the causal mask lets the future in": ALL_DECODING_FILES,
    # The remote code holds the same bug as the package. The converter and CTranslate2 tests' beam searches do
    # not show it (measured: none of them fails), so the beam tests of these two files are the ones required.
    "beam search reorders no cache": ["test_modeling.py", "test_marian_equivalence.py"],
    "cross-attention ignores the source padding": ALL_DECODING_FILES,
    "the pointer-generator copies from source padding": ["test_pointer_generator.py"],
    "the copy mass of a source token counts its own position alone": ["test_pointer_generator.py"],
    "every position of a repeated source token carries its column's gradient": ["test_pointer_generator.py"],
}
# The files some mutation names, each run for every mutation, and what failed printed.
CHECKED_FILES = sorted({file for files in MUST_CATCH.values() for file in files})


def test_every_mutation_names_the_files_that_must_catch_it():
    assert set(MUST_CATCH) == set(hf_vanilla_mutations.MUTATIONS)


def test_each_mutation_applies_to_the_model_file():
    """Every anchor is found once in the model as it is (a mutated function that no longer compiles or whose anchor
    moved fails here, in seconds, rather than in the slow runs)."""
    from hf_vanilla import modeling_vanilla

    for name, edits in hf_vanilla_mutations.MUTATIONS.items():
        for edit in edits:
            *owner, attribute = edit.function.split(".")
            holder = getattr(modeling_vanilla, owner[0]) if owner else modeling_vanilla
            original = getattr(holder, attribute)
            replacement = hf_vanilla_mutations.mutated(original, [edit], holder if owner else None)
            assert replacement is not original and replacement.__qualname__ == original.__qualname__, name


def test_an_anchor_that_is_not_there_is_refused_in_one_line():
    from hf_vanilla import modeling_vanilla

    edit = hf_vanilla_mutations.Edit("_copy_mixture", "copy_mass = attention * 2", "copy_mass = attention")
    with pytest.raises(
        LookupError, match=r"^mutation anchor found 0 times in _copy_mixture: 'copy_mass = attention \* 2'$"
    ):
        hf_vanilla_mutations.mutated(modeling_vanilla._copy_mixture, [edit], None)


def failing_tests(mutation: str | None, log: Path) -> tuple[dict[str, list[str]], list[str]]:
    """Runs the checked files' default tests with `mutation` installed (None: none); returns the failing tests of
    each file and the modules the processes mutated."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfE",
            *[f"tests/{f}" for f in CHECKED_FILES],
        ],
        cwd=ROOT,
        env=hf_vanilla_mutations.environment(mutation, log),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    failed: dict[str, list[str]] = {file: [] for file in CHECKED_FILES}
    for match in re.finditer(r"^(?:FAILED|ERROR) tests/(\S+?\.py)::(\S+)", done.stdout, flags=re.MULTILINE):
        failed.setdefault(match.group(1), []).append(match.group(2))
    mutated = log.read_text().split() if log.exists() else []
    return failed, mutated


@pytest.mark.slow
def test_the_unmutated_run_passes_every_checked_file(tmp_path):
    """The control: what the mutations make fail passes when run the same way without them."""
    failed, mutated = failing_tests(None, tmp_path / "mutated.log")
    assert not any(failed.values()), failed
    assert not mutated


@pytest.mark.slow
@pytest.mark.parametrize("mutation", list(MUST_CATCH))
def test_each_mutation_fails_the_tests_that_claim_to_check_it(mutation, tmp_path):
    failed, mutated = failing_tests(mutation, tmp_path / "mutated.log")
    remote = sum(name != "hf_vanilla.modeling_vanilla" for name in mutated)
    print(f"\n{mutation}: mutated in {mutated.count('hf_vanilla.modeling_vanilla')} processes, remote code {remote}")
    for file, tests in failed.items():
        print(f"  {file}: {len(tests)} failed: {', '.join(tests) or '-'}")
    assert "hf_vanilla.modeling_vanilla" in mutated, "the mutation was never applied"
    missed = [file for file in MUST_CATCH[mutation] if not failed.get(file)]
    assert not missed, f"{mutation}: no test failed in {missed}"
