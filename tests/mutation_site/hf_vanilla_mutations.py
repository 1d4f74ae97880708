"""The mutations of tests/test_mutations.py: each breaks hf_vanilla's model the way a real bug would, by replacing
functions of `modeling_vanilla` (a method on its class, or a module function) with mutated versions of themselves.

A mutated version is the function's own source, parsed, with statements, expressions or keyword arguments swapped
where their canonical text (`ast.unparse`, so formatting does not matter) equals the mutation's anchor, exactly once,
then compiled in the module's namespace. The same edits apply to the package (`hf_vanilla.modeling_vanilla`) and to
any copy of the file that transformers loads as remote code. This module imports neither: `sitecustomize` applies a
mutation at import time in every process of a test run (see `install`)."""

import ast
import importlib.abc
import inspect
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

SITE = str(Path(__file__).resolve().parent)
VARIABLE = "HF_VANILLA_MUTATION"  # the mutation's name
LOG_VARIABLE = "HF_VANILLA_MUTATION_LOG"  # a file: each process appends the modules it mutated


@dataclass(frozen=True)
class Edit:
    """In `function` (a module function, or "Class.method"), replace the statement, expression or keyword argument
    whose canonical text is `old` by `new` ("" deletes a statement); with `inside`, only within the statement whose
    canonical text starts with it."""

    function: str
    old: str
    new: str
    inside: str | None = None


MUTATIONS: dict[str, list[Edit]] = {
    "the self-attention cache ignores its past": [
        Edit(
            "VanillaAttention.forward",
            "key_states, value_states = cache.update(key_states, value_states, self.layer_idx)",
            "cache.update(key_states, value_states, self.layer_idx)",
            inside="if past_key_values is not None:",
        )
    ],
    "the causal mask lets the future in": [
        Edit(
            "VanillaDecoder.forward",
            "causal_mask = create_causal_mask(config=mask_config, inputs_embeds=hidden_states, "
            "attention_mask=attention_mask, past_key_values=self_attn_cache)",
            "causal_mask = None",
        ),
        Edit("VanillaDecoderLayer.__init__", "is_causal=True", "is_causal=False"),
    ],
    "beam search reorders no cache": [
        Edit(
            "VanillaTransformerForConditionalGeneration._reorder_cache",
            "past_key_values.self_attention_cache.reorder_cache(beam_idx)",
            "",
        )
    ],
    "cross-attention ignores the source padding": [
        Edit("VanillaDecoderLayer.forward", "attention_mask=encoder_attention_mask", "attention_mask=None")
    ],
    "the pointer-generator copies from source padding": [
        Edit(
            "VanillaDecoder.forward",
            "encoder_attention_mask=copy_attention_mask if layer.returns_copy_attention else cross_attention_mask",
            "encoder_attention_mask=None if layer.returns_copy_attention else cross_attention_mask",
        )
    ],
    "the copy mass of a source token counts its own position alone": [
        Edit(
            "_copy_mixture",
            "copy_mass = torch.zeros_like(attention).scatter_add(-1, first, attention).gather(-1, first)",
            "copy_mass = attention",
        )
    ],
    "every position of a repeated source token carries its column's gradient": [
        Edit(
            "_PointerGeneratorLogProbs.backward",
            "grad_mixed = grad.gather(-1, columns) * is_first",
            "grad_mixed = grad.gather(-1, columns)",
        )
    ],
}


def _parse_like(node: ast.AST, text: str) -> list[ast.AST]:
    """`text` parsed as the kind of node `node` is: statements (none for ""), an expression or a keyword."""
    if isinstance(node, ast.stmt):
        return ast.parse(text).body
    if isinstance(node, ast.keyword):
        return [ast.parse(f"f({text})", mode="eval").body.keywords[0]]
    return [ast.parse(text, mode="eval").body]


class _Swap(ast.NodeTransformer):
    def __init__(self, edit: Edit):
        self.edit, self.done, self.depth = edit, 0, 0 if edit.inside else 1

    def visit(self, node: ast.AST):
        inside = self.edit.inside and isinstance(node, ast.stmt) and ast.unparse(node).startswith(self.edit.inside)
        self.depth += bool(inside)
        try:
            if (
                self.depth
                and isinstance(node, ast.stmt | ast.expr | ast.keyword)
                and ast.unparse(node) == self.edit.old
            ):
                self.done += 1
                return _parse_like(node, self.edit.new)
            return super().visit(node)
        finally:
            self.depth -= bool(inside)


def mutated(function: Callable, edits: list[Edit], owner: type | None) -> Callable:
    """`function` recompiled from its source with `edits` applied (each anchor must be found exactly once), in its
    module's namespace; a method gets `owner` as the `__class__` that a bare `super()` reads."""
    function = inspect.unwrap(function)  # its source holds its decorators, which run again on the mutated one
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    for edit in edits:
        swap = _Swap(edit)
        tree = swap.visit(tree)
        if swap.done != 1:
            raise LookupError(f"mutation anchor found {swap.done} times in {edit.function}: {edit.old!r}")
    # def factory(__class__): <the function>; return it — so that super() inside finds its class.
    factory = ast.FunctionDef(
        name="_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg("__class__")], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[*tree.body, ast.Return(ast.Name(function.__name__, ast.Load()))],
        decorator_list=[],
        type_params=[],
    )
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    namespace: dict = {}
    exec(compile(module, f"{inspect.getsourcefile(function)} (mutated)", "exec"), function.__globals__, namespace)
    replacement = namespace["_factory"](owner)
    replacement.__qualname__ = function.__qualname__  # not _factory.<locals>.name
    return replacement


def apply(module: ModuleType, name: str) -> None:
    """Replaces the functions of `module` (a modeling_vanilla) that mutation `name` edits by their mutated versions."""
    by_function: dict[str, list[Edit]] = {}
    for edit in MUTATIONS[name]:
        by_function.setdefault(edit.function, []).append(edit)
    for qualified, edits in by_function.items():
        *owner_name, attribute = qualified.split(".")
        owner = getattr(module, owner_name[0]) if owner_name else module
        setattr(owner, attribute, mutated(getattr(owner, attribute), edits, owner if owner_name else None))
    log = os.environ.get(LOG_VARIABLE)
    if log:
        with open(log, "a") as file:
            file.write(f"{module.__name__}\n")


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a hook on a watched module right after its code ran, wherever the other finders find it."""

    def __init__(self, hooks: dict[str, Callable[[ModuleType], None]]):
        self.hooks = hooks

    def find_spec(self, fullname, path, target=None):
        hook = self.hooks.get(fullname)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            hook(module)

        spec.loader.exec_module = exec_module
        return spec


def _patch_remote_code_loading(name: str) -> Callable[[ModuleType], None]:
    """A hook for transformers.dynamic_module_utils: a modeling_vanilla.py loaded as remote code is mutated too,
    each time transformers (re)runs its code."""

    def hook(dynamic_module_utils: ModuleType) -> None:
        load = dynamic_module_utils.get_class_in_module

        def get_class_in_module(class_name, module_path, **kwargs):
            found = load(class_name, module_path, **kwargs)
            module = sys.modules[found.__module__]
            run = getattr(module, "__transformers_module_hash__", None)
            if Path(module.__file__).name == "modeling_vanilla.py" and module.__dict__.get("_mutated_run") != run:
                apply(module, name)
                module._mutated_run = run
                found = getattr(module, class_name)
            return found

        dynamic_module_utils.get_class_in_module = get_class_in_module

    return hook


def _propagate_to_subprocesses() -> None:
    """Child processes given their own environment (test_remote_code drops PYTHONPATH) still get the mutation."""
    init = subprocess.Popen.__init__

    def __init__(self, *args, env=None, **kwargs):
        if env is not None:
            env = {**env, VARIABLE: os.environ[VARIABLE]}
            if LOG_VARIABLE in os.environ:
                env[LOG_VARIABLE] = os.environ[LOG_VARIABLE]
            paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
            env["PYTHONPATH"] = os.pathsep.join([SITE, *paths])
        init(self, *args, env=env, **kwargs)

    subprocess.Popen.__init__ = __init__


def install(name: str) -> None:
    """Mutation `name` in this process and its children: hf_vanilla.modeling_vanilla and remote-code copies are
    mutated when imported."""
    if name not in MUTATIONS:
        raise SystemExit(f"{VARIABLE}={name!r} names no mutation; choose one of {sorted(MUTATIONS)}")
    sys.meta_path.insert(
        0,
        _AfterImport(
            {
                "hf_vanilla.modeling_vanilla": lambda module: apply(module, name),
                "transformers.dynamic_module_utils": _patch_remote_code_loading(name),
            }
        ),
    )
    _propagate_to_subprocesses()


def environment(name: str | None, log: Path | None = None) -> dict[str, str]:
    """os.environ for a child process (run from the repository root) with mutation `name` (None: none) installed
    by this folder's sitecustomize, logging the modules it mutates to `log`."""
    root = str(Path(SITE).parents[1])
    env = {k: v for k, v in os.environ.items() if k not in (VARIABLE, LOG_VARIABLE)}
    env["PYTHONPATH"] = os.pathsep.join([SITE, root] if name else [root])
    if name:
        env[VARIABLE] = name
    if log is not None:
        env[LOG_VARIABLE] = str(log)
    return env
