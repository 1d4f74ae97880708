"""A saved folder loads with trust_remote_code in a process where hf_vanilla cannot be imported."""

import json
import os
import subprocess
import sys
import textwrap

import torch

from conftest import tiny_model

# Runs in a fresh interpreter in which any import of hf_vanilla fails, as on a machine without the package.
LOADER = textwrap.dedent(
    """
    import sys, json, importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "hf_vanilla" or name.startswith("hf_vanilla."):
                raise ImportError("hf_vanilla is not installed here")
    sys.meta_path.insert(0, Block())
    import torch
    from transformers import AutoModelForSeq2SeqLM
    folder, trust = sys.argv[1], sys.argv[2] == "1"
    try:
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=trust)
    except Exception as error:
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        raise SystemExit(0)
    ids = torch.tensor(json.loads(sys.argv[3]))
    out = model.generate(ids, attention_mask=(ids != 0).long())
    print(json.dumps({"module": type(model).__module__, "beams": out.tolist()}))
    """
)


def run_loader(folder, trust: bool, ids: torch.Tensor) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HF_HUB_OFFLINE"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", LOADER, str(folder), "1" if trust else "0", json.dumps(ids.tolist())],
        capture_output=True, text=True, env=env, cwd=str(folder), timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_remote_code_load_gives_identical_beams_and_a_clear_refusal_without_trust(tmp_path):
    model = tiny_model()
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSeq2SeqLM"] == "modeling_vanilla.VanillaTransformerForConditionalGeneration"
    assert (tmp_path / "modeling_vanilla.py").exists() and (tmp_path / "configuration_vanilla.py").exists()
    ids = torch.tensor([[5, 17, 300, 42, 2], [9, 11, 2, 0, 0]])
    expected = model.generate(ids, attention_mask=(ids != 0).long()).tolist()

    loaded = run_loader(tmp_path, True, ids)
    assert "hf_vanilla" not in loaded["module"] and "modeling_vanilla" in loaded["module"]
    assert loaded["beams"] == expected

    refused = run_loader(tmp_path, False, ids)
    assert refused["error"] == "ValueError" and "trust_remote_code" in refused["message"]
