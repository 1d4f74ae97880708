"""The decoding tests can fail: each mutation below breaks the model the way a real bug would, in a copy of the
package, and the default (fast) tests of every file that claims to check that part must then fail.

Run with `pytest -m slow tests/test_mutations.py -s` to see which tests caught each mutation."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL_FILE = "hf_vanilla/modeling_vanilla.py"

# Every test file that compares decodings: hf_vanilla's own, against MarianMTModel and CTranslate2, as remote code.
ALL_DECODING_FILES = [
    "test_modeling.py",
    "test_marian_equivalence.py",
    "test_remote_code.py",
    "test_convert.py",
    "test_ct2.py",
]
# name: (edits of the model file as (exact text, replacement), the test files that must catch it)
MUTATIONS = {
    "the self-attention cache ignores its past": (
        [
            (
                " " * 16 + "key_states, value_states = cache.update(key_states, value_states, self.layer_idx)\n\n",
                " " * 16 + "cache.update(key_states, value_states, self.layer_idx)\n\n",
            )
        ],
        ALL_DECODING_FILES,
    ),
    "the causal mask lets the future in": (
        [
            ("causal_mask = create_causal_mask(", "causal_mask = None and create_causal_mask("),
            ("is_cross_attention=False, is_causal=True", "is_cross_attention=False, is_causal=False"),
        ],
        ALL_DECODING_FILES,
    ),
    "beam search reorders no cache": (
        [("        past_key_values.self_attention_cache.reorder_cache(beam_idx)\n", "")],
        # The remote code holds the same bug as the package. The converter and CTranslate2 tests' beam searches do
        # not show it (measured: none of them fails), so the beam tests of these two files are the ones required.
        ["test_modeling.py", "test_marian_equivalence.py"],
    ),
    "cross-attention ignores the source padding": (
        [
            (
                "attention_mask=encoder_attention_mask,\n            key_value_states=encoder_hidden_states,",
                "attention_mask=None,\n            key_value_states=encoder_hidden_states,",
            )
        ],
        ALL_DECODING_FILES,
    ),
    "the pointer-generator copies from source padding": (
        [
            (
                "=copy_attention_mask if layer.returns_copy_attention else cross_attention_mask,",
                "=None if layer.returns_copy_attention else cross_attention_mask,",
            )
        ],
        ["test_pointer_generator.py"],
    ),
}
# The files some mutation names, each run for every mutation, and what failed printed.
CHECKED_FILES = sorted({file for _, files in MUTATIONS.values() for file in files})


def mutated_copy(destination: Path, edits: list[tuple[str, str]]) -> Path:
    """The package, tests and pyproject copied to `destination`, with `edits` applied to the model file."""
    for name in ("hf_vanilla", "tests", "recipes"):
        shutil.copytree(ROOT / name, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", destination / "pyproject.toml")
    model_file = destination / MODEL_FILE
    source = model_file.read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"mutation anchor not found once (the model file changed?): {old!r}"
        source = source.replace(old, new)
    model_file.write_text(source)
    return destination


def failing_tests(copy: Path) -> dict[str, list[str]]:
    """Runs the checked files' default tests against the copy; returns the failing tests of each file."""
    environment = {**os.environ, "PYTHONPATH": str(copy)}
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
        cwd=copy,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert (
        f"{copy}"
        in subprocess.run(
            [sys.executable, "-c", "import hf_vanilla; print(hf_vanilla.__file__)"],
            cwd=copy,
            env=environment,
            capture_output=True,
            text=True,
        ).stdout
    ), "the copy's package was not the one imported"
    failed: dict[str, list[str]] = {file: [] for file in CHECKED_FILES}
    for match in re.finditer(r"^(?:FAILED|ERROR) tests/(\S+?\.py)::(\S+)", done.stdout, flags=re.MULTILINE):
        failed.setdefault(match.group(1), []).append(match.group(2))
    return failed


@pytest.mark.slow
def test_the_unmutated_copy_passes_every_checked_file(tmp_path):
    """The control: what the mutations make fail passes in a copy made the same way without them."""
    failed = failing_tests(mutated_copy(tmp_path, []))
    assert not any(failed.values()), failed


@pytest.mark.slow
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_each_mutation_fails_the_tests_that_claim_to_check_it(mutation, tmp_path):
    edits, must_catch = MUTATIONS[mutation]
    failed = failing_tests(mutated_copy(tmp_path, edits))
    print(f"\n{mutation}:")
    for file, tests in failed.items():
        print(f"  {file}: {len(tests)} failed: {', '.join(tests) or '-'}")
    missed = [file for file in must_catch if not failed.get(file)]
    assert not missed, f"{mutation}: no test failed in {missed}"
