"""A recipe script (`recipes/NAME.py`) as a module, for the settings its `Arguments` resolve and the functions it pairs
its data with, so that a peer matches what the recipe runs."""

import importlib
import sys
from pathlib import Path
from types import ModuleType

RECIPES = Path(__file__).resolve().parents[3] / "recipes"


def recipe_module(name: str) -> ModuleType:
    """`recipes/NAME.py` imported as `python recipes/NAME.py` imports it, its folder first on the path for its own
    sibling imports (`settings_first`), the path given back as it was once it is imported; the same module every
    call."""
    if name in sys.modules:
        return sys.modules[name]
    path = list(sys.path)
    sys.path.insert(0, str(RECIPES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = path
