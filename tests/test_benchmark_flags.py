"""The benchmarks refuse a count flag under its smallest value in one line, before any work
(`benchmarks/flag_checks.py`)."""

import pytest

from runs import BENCHMARKS, benchmark


@pytest.mark.parametrize(
    "script, flags, message",
    [
        ("compare_marian", ["--repeats", "0"], "--repeats must be at least 1, got 0"),
        ("compare_marian", ["--vocab-size", "3"], "--vocab-size must be at least 4, got 3"),
        ("loss_curves", ["--max-length", "7"], "--max-length must be at least 8, got 7"),
        ("loss_curves", ["--every", "0"], "--every must be at least 1, got 0"),
        ("pointer_generator_speed", ["--repeats", "-1"], "--repeats must be at least 1, got -1"),
        ("decoding_cache", ["--beams", "0"], "--beams must be at least 1, got 0"),
        ("host_malloc", ["--repeats", "0"], "--repeats must be at least 1, got 0"),
        ("decoding_cache", ["--model", "runs/x/final"], "--model and --sentences go together"),
    ],
)
def test_a_count_under_its_least_is_refused_in_one_line(script, flags, message, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", [str(BENCHMARKS / f"{script}.py")])  # argparse names the script from argv[0]
    with pytest.raises(SystemExit) as stop:
        benchmark(script).parse_args(flags)
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1] == f"{script}.py: error: {message}"
