"""Imported first by each recipe, so that its flags are read and its settings checked before torch, transformers and
datasets load (seconds, tens of seconds on a busy machine): `--help`, a misspelt flag or preset, a value out of
bounds, and a Hub out of reach answer at once, as `hf-vanilla --help` does.

Importing any module of hf_vanilla first runs the package's `__init__`, which imports torch and transformers to
register the model with the Auto classes. Here the package is created from its spec with that `__init__` held back
(importlib's own two steps, `module_from_spec` now and `exec_module` later), so that the standard-library modules a
recipe's settings need (`LIGHT_MODULES`) import alone. The `__init__` runs at the first import of any other module of
the package, or the first name read from the package itself: after that, nothing differs from a plain import. Where
the package is imported already (a test, a notebook), importing this module changes nothing."""

import importlib.abc
import importlib.util
import sys
from types import ModuleType

PACKAGE = "hf_vanilla"
# The package's modules that import nothing but the standard library and each other: a recipe's settings, flags and
# presets, the one wording of errors and bounds, the Hub's reach.
LIGHT_MODULES = frozenset(
    f"{PACKAGE}.{name}"
    for name in (
        "decoding_settings",
        "errors",
        "flag_bounds",
        "hub_reach",
        "model_paths",
        "training",
        "training.arguments",
        "training.flags",
        "training.host_memory",
        "training.preflight",
        "training.presets",
    )
)


class HeldInit(importlib.abc.MetaPathFinder):
    """Runs the held-back `__init__` of `package` at the first import of a module outside `LIGHT_MODULES`, or the
    first name read from the package (its module `__getattr__`), then leaves the import system as it was."""

    def __init__(self, package: ModuleType):
        self.package = package
        package.__getattr__ = self.read

    def find_spec(self, name: str, path=None, target=None) -> None:
        if name.startswith(f"{PACKAGE}.") and name not in LIGHT_MODULES:
            self.run()
        return None  # the usual finders find the module itself

    def read(self, name: str):
        self.run()
        return getattr(self.package, name)

    def run(self) -> None:
        """The package's `__init__`, once."""
        if self not in sys.meta_path:
            return
        sys.meta_path.remove(self)
        del self.package.__getattr__
        self.package.__spec__.loader.exec_module(self.package)


def hold_package_init() -> None:
    """Puts hf_vanilla in `sys.modules` with its `__init__` held back (`HeldInit`), unless it is imported already."""
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.loader is None:  # not installed (or a stale editable install): the plain import says so
        return
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    sys.meta_path.insert(0, HeldInit(package))


hold_package_init()
