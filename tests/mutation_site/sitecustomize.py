"""Runs this process under the mutation `HF_VANILLA_MUTATION` names (`tests/mutations.py`): the package's
`modeling_vanilla` is patched when imported, a Hub remote-code copy when transformers loads it, and child processes
started with an environment of their own get the mutation too (a remote-code loader, torchrun workers)."""

import functools
import importlib.abc
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

NAME = os.environ.get("HF_VANILLA_MUTATION")
SITE = str(Path(__file__).resolve().parent)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `hooks[name](module)` right after module `name` is executed by the usual finders and loaders."""

    def __init__(self, hooks: dict):
        self.hooks = hooks

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.hooks:
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        else:
            return None
        execute, hook = spec.loader.exec_module, self.hooks[fullname]

        def exec_module(module):
            execute(module)
            hook(module)

        spec.loader.exec_module = exec_module
        return spec


def _mutations():
    """tests/mutations.py, loaded by path (tests/ is not put on sys.path), once."""
    mutations = sys.modules.get("hf_vanilla_test_mutations")
    if mutations is None:
        spec = importlib.util.spec_from_file_location("hf_vanilla_test_mutations", Path(SITE).parent / "mutations.py")
        mutations = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mutations)
    return mutations


def _mutate(module) -> None:
    _mutations().mutate(module, NAME)


def _patch_remote_code_loading(dynamic_module_utils) -> None:
    load = dynamic_module_utils.get_class_in_module

    @functools.wraps(load)
    def get_class_in_module(class_name, module_path, **kwargs):
        found = load(class_name, module_path, **kwargs)
        module = sys.modules[found.__module__]
        if module.__name__.endswith(".modeling_vanilla"):
            _mutate(module)
        return found

    dynamic_module_utils.get_class_in_module = get_class_in_module


def _carry_into_children() -> None:
    start = subprocess.Popen.__init__

    @functools.wraps(start)
    def __init__(self, *args, env=None, **kwargs):
        if env is not None:
            env = _mutations().carrying(env, NAME)
        start(self, *args, env=env, **kwargs)

    subprocess.Popen.__init__ = __init__


if NAME:
    sys.meta_path.insert(
        0,
        _AfterImport(
            {"hf_vanilla.modeling_vanilla": _mutate, "transformers.dynamic_module_utils": _patch_remote_code_loading}
        ),
    )
    _carry_into_children()
