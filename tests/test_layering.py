"""The package's imports run one way: the training library (`hf_vanilla.training`) builds on the base modules (model,
tokenization, data, evaluation, parsing), which import nothing from it; only the command line and a run's last step
(`publishing`: results, card, upload) sit above both."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hf_vanilla"


def imported_modules(path: Path) -> list[str]:
    """The absolute names of the hf_vanilla modules `path` imports (relative imports resolved)."""
    package = ["hf_vanilla", *path.relative_to(PACKAGE).parent.parts]
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names += [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_base_modules_import_nothing_from_the_training_library():
    base = [
        path
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] != "training" and path.name not in ("cli.py", "publishing.py")
    ]
    assert PACKAGE / "tokenization.py" in base and len(base) > 10
    upward = {
        str(path.relative_to(PACKAGE)): name
        for path in base
        for name in imported_modules(path)
        if name == "hf_vanilla.training" or name.startswith("hf_vanilla.training.")
    }
    assert not upward, upward


def test_tests_in_a_folder_mirror_a_module_of_the_package():
    """tests/SUB/test_NAME.py tests hf_vanilla/SUB/NAME.py: a test about one module of a subpackage sits in the folder
    that mirrors it (guarantees that span the package, and tests of top-level modules, stay in tests/)."""
    tests = Path(__file__).resolve().parent
    nested = list(tests.glob("*/test_*.py"))
    assert len(nested) > 10
    orphans = [
        str(path.relative_to(tests))
        for path in nested
        if not (PACKAGE / path.parent.name / f"{path.stem.removeprefix('test_')}.py").is_file()
    ]
    assert not orphans, orphans
