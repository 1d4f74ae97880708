"""Loading a saved model in a fresh interpreter in which hf_vanilla cannot be imported, as on a machine without
the package: what a Hub user's `trust_remote_code` load gets."""

import json
import os
import subprocess
import sys
import textwrap

import torch

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
    mask = (ids != model.config.pad_token_id).long()
    out = {beams: model.generate(ids, attention_mask=mask, num_beams=beams).tolist() for beams in (1, 4)}
    print(json.dumps({"module": type(model).__module__, "greedy": out[1], "beam": out[4]}))
    """
)


def run_loader(folder, trust: bool, ids: torch.Tensor) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HF_HUB_OFFLINE"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", LOADER, str(folder), "1" if trust else "0", json.dumps(ids.tolist())],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(folder),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
