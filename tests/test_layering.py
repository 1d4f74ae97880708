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


def top_level_imports(tree: ast.Module) -> set[str]:
    """The names a module binds by its own top-level imports."""
    return {
        (alias.asname or alias.name).split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }


def test_names_are_imported_from_their_home_module():
    """A name is imported from the module that defines it, not through another module that imports it (a re-export
    nobody needs; a package's `__init__`, its public face, is the exception)."""
    root = PACKAGE.parent
    files = [*PACKAGE.rglob("*.py"), *(root / "recipes").glob("*.py"), *(root / "benchmarks").rglob("*.py")]
    files += [*(root / "tests").rglob("*.py"), root / "hf_vanilla_cli.py"]
    borrowed = []
    for path in files:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = ["hf_vanilla", *path.relative_to(PACKAGE).parent.parts][: -node.level + 1 or None]
                module = [*base, *(node.module.split(".") if node.module else [])]
            else:
                module = (node.module or "").split(".")
            source = root.joinpath(*module).with_suffix(".py")
            if module[0] != "hf_vanilla" or not source.is_file():  # outside the package, or a package's __init__
                continue
            passed_on = top_level_imports(ast.parse(source.read_text()))
            borrowed += [
                f"{path.relative_to(root)}:{node.lineno} {alias.name} from {'.'.join(module)}"
                for alias in node.names
                if alias.name in passed_on
            ]
    assert not borrowed, borrowed


def test_the_copy_mechanism_is_imported_by_the_model_never_the_other_way():
    """`pointer_generator_vanilla.py` travels to the Hub beside the model: flat, single-dot imports, of the
    configuration at most; `modeling_vanilla.py` imports it (one way)."""
    copy_file = PACKAGE / "pointer_generator_vanilla.py"
    imported = {name for name in imported_modules(copy_file) if name.startswith("hf_vanilla")}
    assert imported and all(name.startswith("hf_vanilla.configuration_vanilla") for name in imported), imported
    relative = [node for node in ast.walk(ast.parse(copy_file.read_text())) if isinstance(node, ast.ImportFrom)]
    assert all(node.level in (0, 1) for node in relative)
    assert "hf_vanilla.pointer_generator_vanilla" in imported_modules(PACKAGE / "modeling_vanilla.py")


def test_nothing_here_imports_the_former_decoding_module():
    """`hf_vanilla.decoding` is `batch_decoding`'s former name, kept for outside code with a FutureWarning: the
    package, recipes, benchmarks and tests import `hf_vanilla.batch_decoding`, and so do the cards' snippets."""
    root = PACKAGE.parent
    files = [*PACKAGE.rglob("*.py"), *(root / "recipes").rglob("*.py"), *(root / "benchmarks").rglob("*.py")]
    files += [*(root / "tests").rglob("*.py"), root / "hf_vanilla_cli.py"]
    former = [
        str(path.relative_to(root))
        for path in files
        if path != PACKAGE / "decoding.py" and "hf_vanilla.decoding" in imported_modules_anywhere(path)
    ]
    snippets = [*(PACKAGE / "templates").glob("*.j2"), *(root / "model_cards").glob("*.md"), root / "README.md"]
    former += [str(path.relative_to(root)) for path in snippets if "hf_vanilla.decoding import" in path.read_text()]
    assert not former, former


def imported_modules_anywhere(path: Path) -> list[str]:
    """The hf_vanilla modules `path` imports, relative imports resolved for files of the package."""
    if path.is_relative_to(PACKAGE):
        return imported_modules(path)
    tree = ast.parse(path.read_text())
    return [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module] + [
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    ]
