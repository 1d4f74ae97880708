"""Each peer's own virtual environment, outside the repository, made from the pinned install line below (also in
docs/benchmarks.md); none of them is ever a dependency of hf_vanilla."""

import os
import subprocess
import sys
from pathlib import Path

# The pinned install lines (pip arguments). fairseq-fixed is the 0.12 line for Python 3.11+, built from source
# (about 8 minutes); opennmt-py 3.5.1 pulls torch 2.2.2 and needs numpy < 2; sockeye 3.1.34 pulls torch 1.13.1.
INSTALL = {
    "fairseq": ["torch==2.14.1", "fairseq-fixed==0.12.3.1"],
    "opennmt": ["opennmt-py==3.5.1", "numpy<2"],
    "sockeye": ["sockeye==3.1.34"],
}
# Where the environments go unless --venvs says otherwise.
DEFAULT_ROOT = Path(os.environ.get("HF_VANILLA_PEER_VENVS", Path.home() / ".cache" / "hf_vanilla" / "peer-venvs"))
MARKER = "hf_vanilla-install.txt"  # the install line an environment was made from


def install_line(system: str) -> str:
    """The pip command that makes `system`'s environment, as the docs print it."""
    return "pip install " + " ".join(f"'{p}'" if "<" in p or ">" in p else p for p in INSTALL[system])


def venv_bin(root: Path, system: str) -> Path:
    """The `bin` folder of `system`'s environment under `root`."""
    return Path(root) / system / "bin"


def ensure_venv(system: str, root: Path = DEFAULT_ROOT, log=sys.stderr) -> Path:
    """`system`'s environment under `root`: reused when it records the same install line (`MARKER`), else made (or
    completed) with `python -m venv` and pip; returns its `bin` folder."""
    folder = Path(root) / system
    marker, line = folder / MARKER, install_line(system)
    if marker.is_file() and marker.read_text().strip() == line:
        return venv_bin(root, system)
    if not (folder / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    print(f"[peers] making {folder}: {line} (minutes)", file=log, flush=True)
    subprocess.run([str(folder / "bin" / "pip"), "install", *INSTALL[system]], check=True)
    marker.write_text(line + "\n")
    return venv_bin(root, system)
