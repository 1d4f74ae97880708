"""One shape for the line that ends a program on an error its user can fix, `PROGRAM: message` (`errors.user_exit`):
the command line's `hf-vanilla: `, a recipe's `summarize: `, the tuning script's and each benchmark's own name; no
program words that line itself."""

import ast
from pathlib import Path

import pytest

from hf_vanilla.errors import error_line, user_exit

from runs import recipe

ROOT = Path(__file__).resolve().parents[1]

# file: why it words its exit line itself (in the same shape).
OWN_EXIT_LINE = {
    "hf_vanilla/errors.py": "user_exit itself",
    "benchmarks/render_tables.py": "standard library only: the package's __init__ imports transformers (seconds)",
}


def test_user_exit_ends_with_one_line_named_by_the_program():
    exit_ = user_exit("tune_summary_decoding", error_line(OSError(2, "No such file or directory", "x.json")))
    assert isinstance(exit_, SystemExit)
    assert exit_.code == "tune_summary_decoding: No such file or directory: x.json"


def worded_exits(path: Path) -> list[str]:
    """The `SystemExit(...)` and `sys.exit(...)` calls in `path` given a message written out in place (a string, an
    f-string, a concatenation) rather than by `user_exit`; an exit status (`SystemExit(1)`) is no message."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        function = ast.unparse(node.func)
        message = node.args[0]
        written = isinstance(message, (ast.JoinedStr, ast.BinOp)) or (
            isinstance(message, ast.Constant) and isinstance(message.value, str)
        )
        if function in ("SystemExit", "sys.exit", "exit") and written:
            found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_program_words_its_own_exit_line():
    files = [*(ROOT / "hf_vanilla").rglob("*.py"), *(ROOT / "recipes").glob("*.py"), ROOT / "hf_vanilla_cli.py"]
    files += (ROOT / "benchmarks").rglob("*.py")
    checked = [path for path in files if path.relative_to(ROOT).as_posix() not in OWN_EXIT_LINE]
    assert ROOT / "recipes" / "tune_summary_decoding.py" in checked and len(checked) > 50
    found = [line for path in checked for line in worded_exits(path)]
    assert not found, "\n".join(found)


def test_the_tuning_script_ends_with_its_name_and_one_line(tmp_path):
    with pytest.raises(SystemExit) as stop:
        recipe("tune_summary_decoding").main(["--model", str(tmp_path / "missing")])
    assert stop.value.code == f"tune_summary_decoding: no model at {tmp_path / 'missing'} (no such folder)"
