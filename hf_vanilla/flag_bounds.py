"""The one wording of a numeric flag under its smallest value, shared by the recipes, the command line, the tuning
script and the benchmarks: `--num-beams must be at least 1, got 0`, `--patience must not be negative, got -1`."""

from collections.abc import Mapping


def bound_problem(flag: str, value: float | None, least: float) -> str | None:
    """The one line saying that `flag` (e.g. `--num-beams`) is under `least`, or None when `value` is None or at
    least `least`."""
    if value is None or value >= least:
        return None
    return f"{flag} must {f'be at least {least}' if least else 'not be negative'}, got {value}"


def bound_problems(values: Mapping[str, float | None], least: Mapping[str, float]) -> list[str]:
    """`bound_problem` of every name of `least` (a field or `argparse` destination, spelt as `--its-flag`) in
    `values`, in `least`'s order."""
    problems = [bound_problem("--" + name.replace("_", "-"), values.get(name), n) for name, n in least.items()]
    return [problem for problem in problems if problem]
