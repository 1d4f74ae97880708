"""The launcher configs in `configs/accelerate/` (issue 65): the README's launch line, on a machine without
`accelerate config`, prints only the run (a misspelt preset is one line, not Accelerate's six of defaults); every
config is read by Accelerate with each of its keys known; the CPU config hands the run the threads it was given."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.commands.launch import launch_command_parser

from hf_vanilla.modeling_vanilla import VanillaPreTrainedModel

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs" / "accelerate"
# Each config: its distributed type, precision and processes.
EXPECTED = {
    "cpu.yaml": ("NO", "no", 1),
    "gpu.yaml": ("NO", "bf16", 1),
    "multi_gpu.yaml": ("MULTI_GPU", "bf16", 8),
    "fsdp.yaml": ("FSDP", "bf16", 8),
}


def no_accelerate_config(tmp_path: Path) -> dict:
    """The environment of a machine where nobody ran `accelerate config` (Accelerate looks under HF_HOME)."""
    return dict(os.environ, HOME=str(tmp_path), HF_HOME=str(tmp_path / "hf"), XDG_CACHE_HOME=str(tmp_path / "cache"))


def readme_launch_line() -> str:
    """The `accelerate launch ...` part of the README's first set-up command."""
    block = re.search(r"## Set-up\n\n```bash\n(.*?)\n", (ROOT / "README.md").read_text()).group(1)
    return block[block.index("accelerate launch") :]


def test_the_configs_are_the_ones_named_here():
    assert sorted(path.name for path in CONFIGS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_launch_config_is_read_by_accelerate_with_every_key_known(name):
    config = load_config_from_file(str(CONFIGS / name))
    assert (config.distributed_type.value, config.mixed_precision, config.num_processes) == EXPECTED[name]
    assert config.num_machines == 1 and config.use_cpu == (name == "cpu.yaml")
    # The values Accelerate otherwise fills in and warns about, given (the thread count aside: a flag, see the README).
    assert config.dynamo_config == {"dynamo_backend": "NO"}
    # Each FSDP key is one of `accelerate launch`'s own settings (an unknown one would be ignored without a word).
    launch = vars(launch_command_parser().parse_args(["--config_file", str(CONFIGS / name), "recipe.py"]))
    raw = yaml.safe_load((CONFIGS / name).read_text())
    assert all(key in launch for key in raw.get("fsdp_config", {})), raw.get("fsdp_config")


def test_the_fsdp_config_shards_the_units_the_model_keeps_whole():
    fsdp = load_config_from_file(str(CONFIGS / "fsdp.yaml")).fsdp_config
    assert fsdp["fsdp_version"] == 2 and fsdp["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    assert fsdp["fsdp_transformer_layer_cls_to_wrap"].split(",") == VanillaPreTrainedModel._no_split_modules


def test_the_readme_launch_line_prints_only_the_run_without_accelerate_config(tmp_path):
    line = readme_launch_line()
    assert "--config_file configs/accelerate/cpu.yaml" in line and line.endswith("--preset demo"), line
    misspelt = line.replace("--preset demo", "--preset demoo")
    done = subprocess.run(
        ["bash", "-c", misspelt], cwd=ROOT, env=no_accelerate_config(tmp_path), capture_output=True, text=True
    )
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode != 0 and len(lines) <= 3, lines
    assert lines[-1].startswith("wmt_ende: --preset must be one of ") and "got 'demoo'" in lines[-1], lines


def test_the_cpu_config_gives_the_run_the_threads_it_was_given(tmp_path):
    launch = ["accelerate", "launch", "--config_file", str(CONFIGS / "cpu.yaml"), "--num_cpu_threads_per_process", "3"]
    printed = subprocess.run(
        [*launch, "--no_python", "printenv", "OMP_NUM_THREADS", "ACCELERATE_USE_CPU", "ACCELERATE_MIXED_PRECISION"],
        env=no_accelerate_config(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    assert printed.stdout.split() == ["3", "True", "no"] and printed.stderr == "", printed


def test_a_recipe_without_the_package_installed_says_so_in_the_import_error():
    """`settings_first` holds back the package's `__init__` only where it finds the package; where it does not (not
    installed, a stale editable install), the recipe's own import names the missing package."""
    done = subprocess.run(
        [sys.executable, "-S", str(ROOT / "recipes" / "wmt_ende.py"), "--preset", "demo"],
        cwd="/",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == "ModuleNotFoundError: No module named 'hf_vanilla'"
