"""The package as users get it: a wheel installed into a fresh virtual environment outside the checkout, where
everything the library and the CLI read at run time (card templates, the EVALB metric, the model code) must come from
the wheel itself."""

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hf_vanilla.hub import REMOTE_CODE_FILES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory) -> Path:
    """A virtual environment holding the wheel built from this checkout; its dependencies (torch, transformers, ...)
    are read from this interpreter's site-packages through a plain path entry, which does not run that folder's .pth
    files, so the editable install of the checkout stays invisible there."""
    base = tmp_path_factory.mktemp("wheel")
    # A clean copy: setuptools' build/ folder in the checkout would carry files deleted since the last build.
    source = base / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "runs", "__pycache__", ".pytest_cache", ".ruff_cache"
        ),
    )
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(base / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (base / "dist").glob("hf_vanilla-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in (
        "hf_vanilla/templates/translation.md.j2",
        "hf_vanilla/templates/parsing.md.j2",
        "hf_vanilla/evaluation/metrics/evalb/evalb.py",
        "hf_vanilla/evaluation/metrics/rouge/rouge.py",
    ):
        assert needed in names, needed
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    packages = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(packages) / "outside_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return venv


def run_in(venv: Path, cwd: Path, *command: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environment.update(HF_HOME=str(cwd / "hf_home"), HF_HUB_OFFLINE="1", PATH=f"{venv / 'bin'}:/usr/bin:/bin")
    return subprocess.run(list(command), cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_wheel_imports_from_its_own_files(wheel_env, tmp_path):
    done = run_in(wheel_env, tmp_path, "python", "-c", "import hf_vanilla; print(hf_vanilla.__file__)")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().startswith(str(wheel_env)), done.stdout


@pytest.mark.slow
def test_push_dry_run_from_the_wheel_builds_the_hub_folder(wheel_env, wmt_run, tmp_path):
    run_dir, results = wmt_run
    done = run_in(
        wheel_env,
        tmp_path,
        "hf-vanilla",
        "push",
        str(run_dir),
        "someone/vanilla-demo",
        "--dry-run",
        "--build-dir",
        str(tmp_path / "hub"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "not uploaded (--dry-run)" in done.stdout
    card = (tmp_path / "hub" / "README.md").read_text()
    assert results["sacrebleu_signature"] in card
    for name in (*REMOTE_CODE_FILES, "model.safetensors"):
        assert (tmp_path / "hub" / name).is_file(), name


@pytest.mark.slow
def test_evalb_metric_loads_from_the_wheel(wheel_env, tmp_path):
    gold = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
    moved = "(S (NP (DT The) (NN cat)) (VP (NP (VBD sat) (IN on)) (NP (DT the) (NN mat))) (. .))"
    script = (
        "import json, sys\nfrom hf_vanilla.evaluation.evalb import load_evalb_metric\n"
        "metric = load_evalb_metric()\n"
        f"print(json.dumps(metric.compute(predictions=[{moved!r}], references=[{gold!r}])))\n"
    )
    done = run_in(wheel_env, tmp_path, "python", "-c", script)
    assert done.returncode == 0, done.stderr[-3000:]
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    assert scores == {"precision": 80.0, "recall": 80.0, "f1": 80.0, "exact_match": 0.0, "sentences": 1}


@pytest.mark.slow
def test_the_wheels_console_script_answers_help_and_version_without_importing_torch(wheel_env, tmp_path):
    """`hf-vanilla --help` and `--version` from the wheel: the console script (`hf_vanilla_cli`) reads its flags
    without torch, transformers or the package (seconds of imports), as `python -X importtime` shows."""
    done = run_in(wheel_env, tmp_path, "hf-vanilla", "--version")
    assert done.returncode == 0 and done.stdout.strip() == "hf-vanilla 0.1.0", done.stderr[-3000:]
    done = run_in(wheel_env, tmp_path, "python", "-X", "importtime", "-m", "hf_vanilla_cli", "--help")
    assert done.returncode == 0 and "translate" in done.stdout, done.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert not imported & {"torch", "transformers", "hf_vanilla"}, sorted(imported)[:20]
