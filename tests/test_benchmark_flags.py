"""The benchmarks and studies refuse a count flag under its smallest value in one line, before any work
(`benchmarks/flag_checks.py`)."""

import pytest

from runs import benchmark


@pytest.mark.parametrize(
    "script, flags, message",
    [
        ("compare_marian", ["--repeats", "0"], "--repeats must be at least 1, got 0"),
        ("compare_marian", ["--vocab-size", "3"], "--vocab-size must be at least 4, got 3"),
        ("loss_curves", ["--max-length", "7"], "--max-length must be at least 8, got 7"),
        ("loss_curves", ["--every", "0"], "--every must be at least 1, got 0"),
        ("pointer_generator_speed", ["--repeats", "-1"], "--repeats must be at least 1, got -1"),
        ("studies.decoding_cache", ["--beams", "0"], "--beams must be at least 1, got 0"),
        ("studies.host_malloc", ["--repeats", "0"], "--repeats must be at least 1, got 0"),
        ("studies.decoding_cache", ["--model", "runs/x/final"], "--model and --sentences go together"),
        ("studies.strided_attention", ["--steps", "0"], "--steps must be at least 1, got 0"),
        ("studies.opennmt_source_use", ["--updates", "0"], "--updates must be at least 1, got 0"),
        ("studies.opennmt_beam_stop", ["--repeats", "0"], "--repeats must be at least 1, got 0"),
        (
            "studies.strided_attention",
            ["--rooms", "1.5", "0.5"],
            "--rooms must each be at least 1 (a buffer holds the cached positions), got 0.5",
        ),
    ],
)
def test_a_count_under_its_least_is_refused_in_one_line(script, flags, message, monkeypatch, capsys):
    module = benchmark(script)
    monkeypatch.setattr("sys.argv", [module.__file__])  # argparse names the script from argv[0] (`python -m`)
    with pytest.raises(SystemExit) as stop:
        module.parse_args(flags)
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1] == f"{script.split('.')[-1]}.py: error: {message}"


def test_strided_attention_times_each_layout_of_the_same_cache(capsys):
    """The contiguous cache and each buffer with room (rounded to whole positions) get a line, the contiguous one at
    1.00x of itself; the layouts' outputs were checked equal before any timing (the script exits otherwise)."""
    flags = ["--rows", "3", "--positions", "5", "--rooms", "1.2", "2", "--repeats", "2"]
    benchmark("studies.strided_attention").main(flags)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("3 rows x 4 heads x 32, 5 positions cached")
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "contiguous",
        "buffer of 6 positions",
        "buffer of 10 positions",
    ]
    assert lines[1].endswith("(1.00x)")
