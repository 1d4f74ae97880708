"""`benchmarks/` is a package run from the repository's root (`python -m benchmarks.X`): every module imports without
sys.path edits, imports its siblings as `benchmarks.` modules and no private helper of another module, and every
record's header is `benchmarks/environment.py`'s."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import environment

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
MODULES = sorted(BENCHMARKS.rglob("*.py"))
# The scripts that write a record, and the module of each that builds it: every one's header is `environment()`.
RECORD_WRITERS = (
    "compare_marian.py",
    "compare_engines.py",
    "gpu_suite.py",
    "loss_curves.py",
    "pointer_generator_speed.py",
    "lead_baseline.py",
    "peers/comparison.py",
)
# What a header of its own would write: the versions, the CPU, the cores, the commit, the date.
OWN_HEADER = re.compile(
    r"[\"']?(torch|transformers)[\"']?\s*[:=]\s*(torch|transformers)\.__version__|\bplatform\.|/proc/cpuinfo"
    r"|[:=]\s*os\.cpu_count\(\)|[\"']date[\"']\s*:"
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_benchmarks_module_imports_from_the_root_without_sys_path_edits():
    """In a fresh interpreter started from the repository's root (as `python -m benchmarks.X` starts): every module
    imports, `benchmarks.peers.__main__` included, and sys.path is as Python set it."""
    names = [module_name(path) for path in MODULES]
    assert "benchmarks.peers.__main__" in names and "benchmarks.studies.decode_split" in names
    code = (
        "import importlib, sys\n"
        "before = list(sys.path)\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "assert sys.path == before, sorted(set(sys.path) ^ set(before))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_peers_command_is_python_m_benchmarks_peers():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.peers", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m benchmarks.peers") and "--system" in done.stdout


def local_names() -> set[str]:
    """Every name a module or package under benchmarks/ has: a bare import of one of them is a sibling's."""
    return {path.stem for path in MODULES} | {path.name for path in BENCHMARKS.rglob("*") if path.is_dir()}


def test_no_module_imports_a_sibling_by_bare_name_or_another_module_s_private_helper():
    local, found = local_names() - {"__init__", "__main__"}, []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [f"{where} import {a.name}" for a in node.names if a.name.split(".")[0] in local]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0 and (node.module or "").split(".")[0] in local:
                    found.append(f"{where} from {node.module} (a bare sibling)")
                if node.level or (node.module or "").startswith("benchmarks"):
                    found += [f"{where} {a.name} (private)" for a in node.names if a.name.startswith("_")]
    assert not found, found


def test_sys_path_is_edited_only_to_import_a_recipe_and_given_back():
    """Only `common.recipes` touches sys.path (a recipe imports `settings_first` beside it), and gives it back."""
    editing = [str(path.relative_to(ROOT)) for path in MODULES if "sys.path" in path.read_text()]
    assert editing == ["benchmarks/peers/common/recipes.py"]
    code = (
        "import sys\n"
        "from benchmarks.peers.common.recipes import recipe_module\n"
        "before = list(sys.path)\n"
        "assert recipe_module('ptb_parse').Arguments is recipe_module('ptb_parse').Arguments\n"
        "assert sys.path == before and 'settings_first' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("script", RECORD_WRITERS)
def test_every_record_s_header_is_the_environment_module_s(script):
    source = (BENCHMARKS / script).read_text()
    tree = ast.parse(source)
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported = {(node.module, alias.name) for node in imports for alias in node.names}
    calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert ("benchmarks.environment", "environment") in imported and "environment" in calls
    assert not OWN_HEADER.search(source), f"{script} writes a header of its own"
    assert not OWN_HEADER.search((BENCHMARKS / "peers" / "common" / "records.py").read_text())


def test_the_environment_names_the_machine_versions_commit_and_date():
    header = environment.environment()
    assert list(header) == ["machine", "python", "torch", "transformers", "commit", "date"]
    assert set(header["machine"]) == {"cpu_model", "processor", "cores", "cpu_generation", "kernels", "gpu", "boot_id"}
    assert header["machine"]["kernels"] in {"DEFAULT", "VSX", "ZVECTOR", "AVX2", "AVX512", "SVE256", "SVE"}
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", header["commit"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", header["date"])
    assert environment.environment(commit="abc")["commit"] == "abc"


def test_the_environment_names_the_cpu_model_where_linux_reports_it(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 7B13\n\n"
        "processor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\n"
    )
    real_path = environment.Path
    monkeypatch.setattr(environment, "Path", lambda name: cpuinfo if name == "/proc/cpuinfo" else real_path(name))
    assert environment.machine()["cpu_model"] == "AMD EPYC 7B13"
    assert environment.machine()["cpu_generation"] == "family 25, model 17"  # the first processor's
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\n")
    assert environment.cpu_generation() is None
    cpuinfo.unlink()
    assert environment.cpu_model() is None and environment.cpu_generation() is None


def test_the_environment_names_the_boot_where_linux_reports_it(tmp_path, monkeypatch):
    """Two virtual machines under one CPU name ran the same work 25% apart: the kernel's boot id tells them apart."""
    boot = tmp_path / "boot_id"
    boot.write_text("d4efcd9a-d265-496c-97b7-b41d50de5707\n")
    real_path = environment.Path
    monkeypatch.setattr(environment, "Path", lambda name: boot if name.endswith("boot_id") else real_path(name))
    assert environment.machine()["boot_id"] == "d4efcd9a-d265-496c-97b7-b41d50de5707"
    boot.unlink()
    assert environment.boot_id() is None
