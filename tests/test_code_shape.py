"""Every function of the package, the recipes, the benchmarks and `hf_vanilla_cli.py` is at most 80 lines long (its
`def` line to its last line, decorators not counted) and takes at most 7 named parameters: `self` and `cls` are not
counted, nor `*args`/`**kwargs` (pass-throughs, not settings). The only exemptions, from the parameter limit alone,
are the signatures transformers dictates (`PARAMETERS_DICTATED`); those are still held to 80 lines."""

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
MAX_PARAMETERS = 7

# (file, qualified name): why transformers, not this package, decides the parameters.
PARAMETERS_DICTATED = {
    ("hf_vanilla/modeling_vanilla.py", "VanillaTransformerModel.forward"): (
        "a PreTrainedModel's forward: the arguments transformers' generate and Trainer pass by name"
    ),
    ("hf_vanilla/modeling_vanilla.py", "VanillaTransformerForConditionalGeneration.forward"): (
        "a PreTrainedModel's forward: the arguments transformers' generate and Trainer pass by name"
    ),
    ("hf_vanilla/modeling_vanilla.py", "eager_attention_forward"): (
        "transformers' attention interface (ALL_ATTENTION_FUNCTIONS): every attention function takes these"
    ),
}


def source_files() -> list[Path]:
    """The Python files held to the limits."""
    folders = ("hf_vanilla", "recipes", "benchmarks")
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py")) + [ROOT / "hf_vanilla_cli.py"]


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function in `tree`, nested ones and methods included, with its qualified name."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def named_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters counted: positional and keyword ones, less `self`/`cls` (never `*args`/`**kwargs`)."""
    arguments = function.args
    names = [argument.arg for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    return [name for name in names if name not in ("self", "cls")]


def shape_problems(path: Path, root: Path = ROOT) -> list[str]:
    """One line for each function in `path` over the limits (named by its path under `root`)."""
    relative = path.relative_to(root).as_posix()
    problems = []
    for name, function in functions(ast.parse(path.read_text(), filename=str(path))):
        lines = function.end_lineno - function.lineno + 1
        if lines > MAX_LINES:
            problems.append(f"{relative}:{function.lineno} {name}: {lines} lines (at most {MAX_LINES})")
        count = len(named_parameters(function))
        if count > MAX_PARAMETERS and (relative, name) not in PARAMETERS_DICTATED:
            problems.append(f"{relative}:{function.lineno} {name}: {count} parameters (at most {MAX_PARAMETERS})")
    return problems


def test_functions_are_at_most_80_lines_and_7_parameters():
    files = source_files()
    assert ROOT / "hf_vanilla" / "modeling_vanilla.py" in files and ROOT / "recipes" / "summarize.py" in files
    assert any(path.parent.name == "peers" for path in files), "benchmarks/peers is walked too"
    problems = [problem for path in files for problem in shape_problems(path)]
    assert not problems, "\n".join(problems)


def test_each_exemption_names_a_function_that_exists():
    found = {
        (file, name)
        for file in {file for file, _ in PARAMETERS_DICTATED}
        for name, _ in functions(ast.parse((ROOT / file).read_text()))
    }
    missing = set(PARAMETERS_DICTATED) - found
    assert not missing, f"exempt but not found (renamed or removed?): {sorted(missing)}"


def test_the_rule_counts_lines_and_parameters_as_documented(tmp_path):
    """Lines from `def` to the last line; self, *args and **kwargs not counted; nested functions and methods seen."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 2))  # def + body + return: exactly 80 lines
    (tmp_path / "hf_vanilla").mkdir()
    path = tmp_path / "hf_vanilla" / "sample.py"
    path.write_text(
        f"def fits():\n{body}\n    return 0\n\n\n"
        f"def too_long():\n{body}\n    x = 1\n    return x\n\n\n"
        "class C:\n"
        "    def seven(self, a, b, c, d, e, f, g, *args, **kwargs):\n        pass\n\n"
        "    def eight(self, a, b, c, d, e, f, g, *, h):\n        def inner(a, b, c, d, e, f, g, h):\n"
        "            pass\n"
    )
    assert shape_problems(path, tmp_path) == [
        f"hf_vanilla/sample.py:{MAX_LINES + 3} too_long: {MAX_LINES + 1} lines (at most {MAX_LINES})",
        f"hf_vanilla/sample.py:{2 * MAX_LINES + 10} C.eight: 8 parameters (at most {MAX_PARAMETERS})",
        f"hf_vanilla/sample.py:{2 * MAX_LINES + 11} C.eight.inner: 8 parameters (at most {MAX_PARAMETERS})",
    ]


MODEL_FILE_MAX_LINES = 1000


def test_the_model_file_holds_the_model_and_the_copy_mechanism_has_its_own_file():
    """`modeling_vanilla.py` is the paper's model, at most 1,000 lines; the copy mechanism (the pointer-generator, its
    output, losses, autograd function, whole-word rule and dense reference) is defined in
    `pointer_generator_vanilla.py` alone: no class or function of it in the model file, and no autograd function."""
    package = ROOT / "hf_vanilla"
    model_source = (package / "modeling_vanilla.py").read_text()
    lines = len(model_source.splitlines())
    assert lines <= MODEL_FILE_MAX_LINES, f"modeling_vanilla.py has {lines} lines (at most {MODEL_FILE_MAX_LINES})"

    def defined(source: str) -> dict[str, ast.AST]:
        return {
            node.name: node
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        }

    copy_mechanism = defined((package / "pointer_generator_vanilla.py").read_text())
    assert {
        "VanillaPointerGenerator",
        "CopyMixture",
        "pointer_generator_loss",
        "whole_word_copy_positions",
        "dense_pointer_generator_log_probs",
        "_PointerGeneratorLogProbs",
    } <= set(copy_mechanism)
    in_model = defined(model_source)
    shared_method_names = {"__init__", "forward", "backward"}
    assert not (set(copy_mechanism) - shared_method_names) & set(in_model)
    autograd = [
        name
        for name, node in in_model.items()
        if isinstance(node, ast.ClassDef) and any("Function" in ast.unparse(base) for base in node.bases)
    ]
    assert not autograd, autograd
