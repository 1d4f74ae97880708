"""transformers' own common model tests of the installed release, obtained at test time and never kept in this
repository: `ModelTesterMixin` (`tests/test_modeling_common.py`), `ConfigTester` (`tests/test_configuration_common.py`)
and, where a source tree of the release is given, `GenerationTesterMixin` (`tests/generation/test_utils.py`).

Two sources, in this order:

- `HF_VANILLA_TRANSFORMERS_TESTS`: a checkout of transformers at the installed release's tag (its root or its `tests/`
  folder). Everything runs from it: the generation mixin, the export mixin (`tests/exporters/test_export.py`) and the
  config checks' common arguments (`tests/utils/test_configuration_utils.py`). A checkout of another release is
  refused (skipped with a reason): the tests must be those of the code they test.
- Else the release's source distribution on PyPI (`pip download --no-binary :all:`), unpacked once into
  `~/.cache/hf_vanilla/transformers-<release>-tests/` (`$XDG_CACHE_HOME` if set): it ships `tests/*.py` but none of
  the three modules above, so empty stand-ins take their places (`STAND_INS`) and the tests they hold do not run;
  the test module says which. Offline and uncached, the tests are skipped with the reason.

The files are loaded as a package of their own (`PACKAGE`), as their relative imports need, so that nothing is
imported as `tests` (this repository's own folder)."""

import importlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path

import transformers

RELEASE = transformers.__version__
CHECKOUT_VARIABLE = "HF_VANILLA_TRANSFORMERS_TESTS"
PACKAGE = "transformers_release_tests"
# The modules `test_modeling_common.py` and `test_configuration_common.py` import that the source distribution lacks:
# each name with the empty stand-in that lets them import (the tests those modules hold do not run).
STAND_INS = {
    "generation.test_utils": {"GenerationTesterMixin": type("GenerationTesterMixin", (), {"stand_in": True})},
    "exporters.test_export": {"ExportTesterMixin": type("ExportTesterMixin", (), {"stand_in": True})},
    "utils.test_configuration_utils": {"config_common_kwargs": None},
}


class Unavailable(Exception):
    """The release's tests cannot be had here; the message says why (a skip reason)."""


@dataclass
class ReleaseTests:
    """The loaded test modules and where they came from; `stand_ins` names the modules that are empty stand-ins."""

    modeling: types.ModuleType
    configuration: types.ModuleType
    origin: str
    stand_ins: set[str] = field(default_factory=set)

    @property
    def has_generation_tests(self) -> bool:
        return "generation.test_utils" not in self.stand_ins


def cache_dir() -> Path:
    """Where the source distribution's tests are kept once unpacked."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "hf_vanilla" / f"transformers-{RELEASE}-tests"


def checkout_tests(path: str) -> Path:
    """The `tests/` folder of the checkout `path` names, refused unless the checkout is of the installed release."""
    root = Path(path).expanduser().resolve()
    tests = root if (root / "test_modeling_common.py").is_file() else root / "tests"
    if not (tests / "test_modeling_common.py").is_file():
        raise Unavailable(f"{CHECKOUT_VARIABLE}={path} holds no tests/test_modeling_common.py")
    init = tests.parent / "src" / "transformers" / "__init__.py"
    if init.is_file():
        found = re.search(r'^__version__ = "([^"]+)"', init.read_text(encoding="utf-8"), re.MULTILINE)
        version = found.group(1) if found else "unknown"
        if version != RELEASE:
            raise Unavailable(
                f"{CHECKOUT_VARIABLE}={path} is transformers {version}, but {RELEASE} is installed: check out "
                f"v{RELEASE}"
            )
    return tests


def sdist_tests() -> Path:
    """The source distribution's `tests/*.py`, downloaded and unpacked into `cache_dir()` the first time."""
    target = cache_dir()
    if (target / "__init__.py").is_file():
        return target
    with tempfile.TemporaryDirectory() as scratch:
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--retries", "1", "--timeout", "30"]
        command = [*pip, "--no-deps", "--no-binary", ":all:", f"transformers=={RELEASE}", "-d", scratch]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"pip download of transformers=={RELEASE}'s sources timed out") from None
        archives = sorted(Path(scratch).glob(f"transformers-{RELEASE}.tar.gz"))
        if done.returncode or not archives:
            last = (done.stderr.strip().splitlines() or ["no archive"])[-1]
            raise Unavailable(
                f"transformers {RELEASE}'s sources are not cached at {target} and not downloadable: {last}"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        unpacked = Path(tempfile.mkdtemp(dir=target.parent))  # beside the target: the rename below stays atomic
        with tarfile.open(archives[0]) as archive:
            prefix = f"transformers-{RELEASE}/tests/"
            for member in archive.getmembers():
                name = member.name[len(prefix) :] if member.name.startswith(prefix) else ""
                if member.isfile() and name.endswith(".py") and "/" not in name:
                    (unpacked / name).write_bytes(archive.extractfile(member).read())
        # The package's marker, empty as transformers' own `tests/__init__.py` (which the archive lacks):
        # `test_configuration_common.py` executes it.
        (unpacked / "__init__.py").write_text("")
    try:
        unpacked.rename(target)  # atomic: a concurrent run that got there first keeps its copy
    except OSError:
        shutil.rmtree(unpacked, ignore_errors=True)
        if not (target / "__init__.py").is_file():
            raise
    return target


def _package(folder: Path, stand_ins: set[str]) -> None:
    """Registers `folder` as the package `PACKAGE`, with the stand-ins of `STAND_INS` named in `stand_ins`."""
    package = types.ModuleType(PACKAGE)
    package.__path__ = [str(folder)]
    sys.modules[PACKAGE] = package
    for name in stand_ins:
        parent = name.split(".")[0]
        sys.modules.setdefault(f"{PACKAGE}.{parent}", types.ModuleType(f"{PACKAGE}.{parent}")).__path__ = []
        module = types.ModuleType(f"{PACKAGE}.{name}")
        module.__dict__.update(STAND_INS[name])
        sys.modules[module.__name__] = module


def load() -> ReleaseTests:
    """transformers' common test modules of the installed release (see the module's docstring). Raises
    `Unavailable` when they cannot be had. Loads them once a process."""
    loaded = sys.modules.get(f"{PACKAGE}.test_modeling_common")
    if loaded is not None:
        return loaded.release_tests
    checkout = os.environ.get(CHECKOUT_VARIABLE)
    if checkout:
        folder, origin = checkout_tests(checkout), f"the checkout {checkout}"
        stand_ins = {name for name in STAND_INS if not (folder / (name.replace(".", "/") + ".py")).is_file()}
    else:
        folder, origin, stand_ins = sdist_tests(), f"transformers {RELEASE}'s source distribution", set(STAND_INS)
    _package(folder, stand_ins)
    tests = ReleaseTests(
        modeling=importlib.import_module(f"{PACKAGE}.test_modeling_common"),
        configuration=importlib.import_module(f"{PACKAGE}.test_configuration_common"),
        origin=origin,
        stand_ins=stand_ins,
    )
    tests.modeling.release_tests = tests
    return tests
