"""No pickle of untrusted files: the package and the recipes load weights and state only through safetensors, JSON
or `torch.load(weights_only=True)`, found by scanning their syntax trees for every call that can unpickle."""

import ast
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "hf_vanilla").rglob("*.py"), *(ROOT / "recipes").glob("*.py")])

# Modules whose loads unpickle (or unmarshal) whatever the file holds.
UNPICKLING_MODULES = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
# Accelerate saves objects given to register_for_checkpointing as pickles (custom_checkpoint_N.pkl), and
# Accelerator.load_state unpickles them with weights_only=False (accelerate/checkpointing.py, load_custom_state).
REGISTERED_STATE = "register_for_checkpointing"


def _keyword_is(call: ast.Call, name: str, value) -> bool:
    return any(k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is value for k in call.keywords)


def unsafe_loads(source: str) -> list[str]:
    """`line: what` for each import or call in `source` that can run code held in a file it loads: the unpickling
    modules, torch.load without weights_only=True (and `from torch import load`), torch.jit.load, numpy.load with
    allow_pickle, pandas.read_pickle, yaml.load without a safe loader, from_pretrained(trust_remote_code=True) and
    Accelerate's register_for_checkpointing."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names if a.name.split(".")[0] in UNPICKLING_MODULES]
            found += [f"{node.lineno}: import {module}" for module in modules]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] in UNPICKLING_MODULES or (
                module in ("torch", "torch.serialization") and any(a.name == "load" for a in node.names)
            ):
                found.append(f"{node.lineno}: from {module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            last = name.split(".")[-1]
            if name in ("torch.load", "torch.serialization.load") and not _keyword_is(node, "weights_only", True):
                found.append(f"{node.lineno}: {name} without weights_only=True")
            elif name == "torch.jit.load" or last in ("read_pickle", "unsafe_load", "full_load"):
                found.append(f"{node.lineno}: {name}")
            elif name in ("np.load", "numpy.load") and any(
                k.arg == "allow_pickle" and not _keyword_is(node, "allow_pickle", False) for k in node.keywords
            ):
                found.append(f"{node.lineno}: {name} with allow_pickle")
            elif name == "yaml.load" and not any(
                k.arg == "Loader" and "Safe" in ast.unparse(k.value) for k in node.keywords
            ):
                found.append(f"{node.lineno}: yaml.load without a SafeLoader")
            elif last == "from_pretrained" and any(
                k.arg == "trust_remote_code" and not _keyword_is(node, "trust_remote_code", False)
                for k in node.keywords
            ):
                found.append(f"{node.lineno}: {name} with trust_remote_code")
            elif last == REGISTERED_STATE:
                found.append(f"{node.lineno}: {name} (Accelerate unpickles registered objects on load_state)")
    return found


def _scan(registered: bool) -> dict[str, list[str]]:
    """Findings per source file, those about Accelerate's registered objects alone or all others."""
    found = {}
    for path in SOURCES:
        hits = [h for h in unsafe_loads(path.read_text()) if (REGISTERED_STATE in h) == registered]
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    return found


def test_the_scan_finds_every_kind_of_unsafe_load_and_passes_safe_ones():
    unsafe = {
        "import pickle": "import pickle",
        "from joblib import load": "from joblib import load",
        "from torch import load": "from torch import load",
        "torch.load(f)": "torch.load without weights_only=True",
        "torch.load(f, weights_only=False)": "torch.load without weights_only=True",
        "torch.load(f, weights_only=flag)": "torch.load without weights_only=True",
        "torch.jit.load(f)": "torch.jit.load",
        "np.load(f, allow_pickle=True)": "np.load with allow_pickle",
        "pd.read_pickle(f)": "pd.read_pickle",
        "yaml.load(f)": "yaml.load without a SafeLoader",
        "AutoModel.from_pretrained(p, trust_remote_code=True)": "AutoModel.from_pretrained with trust_remote_code",
        "accelerator.register_for_checkpointing(scheduler)": "accelerator.register_for_checkpointing",
    }
    for code, message in unsafe.items():
        assert [f.split(": ", 1)[1] for f in unsafe_loads(code)][0].startswith(message), code
    safe = [
        "torch.load(f, weights_only=True)",
        "load_file(f)",
        "np.load(f)",
        "np.load(f, allow_pickle=False)",
        "json.loads(t)",
        "yaml.load(f, Loader=yaml.SafeLoader)",
        "AutoModel.from_pretrained(p)",
        "accelerator.load_state(d)",
    ]
    assert [unsafe_loads(code) for code in safe] == [[]] * len(safe)


def test_the_package_and_recipes_load_nothing_through_pickle():
    assert len(SOURCES) > 20  # the scan sees the package
    assert _scan(registered=False) == {}


def test_no_state_is_left_to_accelerates_pickled_custom_checkpoints():
    """The recipes write their own checkpoints (safetensors and JSON, `hf_vanilla.training.checkpoints`): nothing is
    registered with Accelerate, which would pickle it."""
    assert _scan(registered=True) == {}


def _ran(marker: str) -> dict:
    """What a hostile pickle calls when it is loaded: leaves a mark."""
    Path(marker).write_text("ran")
    return {}


class _Hostile:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return _ran, (self.marker,)


def test_a_pickle_that_runs_code_put_in_a_checkpoint_is_never_run_on_resume(tmp_path):
    """Even with a manifest rewritten to match, the files a resume reads are opened as safetensors: a pickle there
    makes the checkpoint unreadable (skipped, the run starts over), not code that runs."""
    from hf_vanilla.training import checkpoints

    from runs import run_loop

    run_loop(tmp_path, 2)
    checkpoint = tmp_path / "checkpoint-00000002"
    marker = tmp_path / "marker"
    for name in ("optimizer.safetensors", "rng-0.safetensors", "model/model.safetensors"):
        torch.save(_Hostile(marker), checkpoint / name)
    checkpoints._write_manifest(checkpoint)  # as an attacker would
    with pytest.raises(checkpoints.CheckpointError, match="not a readable safetensors file"):
        checkpoints.verify_checkpoint(checkpoint)
    assert checkpoints.latest_valid_checkpoint(tmp_path, report=lambda line: None) is None
    result, _ = run_loop(tmp_path, 4, resume=True)
    assert result.steps == 4 and not marker.exists()
    torch.save(_Hostile(marker), tmp_path / "attack.pt")
    torch.load(tmp_path / "attack.pt", weights_only=False)  # the payload is a real attack when unpickled
    assert marker.read_text() == "ran"
