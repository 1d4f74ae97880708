"""A saved folder loads with trust_remote_code in a process where hf_vanilla cannot be imported, and decodes there as
the package does: the reversal model's greedy and beam decodings of a padded batch, token for token (sentences the
model is checked to reverse both ways without the cache, `reversal.reversal_rows`)."""

import json
import os

import torch

from hf_vanilla.hub import REMOTE_CODE_FILES

from remote_loader import run_loader
from reversal import assert_varied, decoded, reversal_rows


def test_remote_code_load_decodes_identically_and_refuses_without_trust(reversal_model, reversal_model_dir):
    folder = reversal_model_dir
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSeq2SeqLM"] == "modeling_vanilla.VanillaTransformerForConditionalGeneration"
    written = {path.name for path in folder.glob("*.py")}
    assert written == set(REMOTE_CODE_FILES), written  # what transformers copies is what the Hub folder requires
    ids, mask, answers = reversal_rows(reversal_model, 8, [3, 10, 5, 7, 4], {"num_beams": 1}, {"num_beams": 4})
    expected = {
        key: reversal_model.generate(ids, attention_mask=mask, num_beams=beams).tolist()
        for key, beams in (("greedy", 1), ("beam", 4))
    }

    loaded = run_loader(folder, True, ids)
    assert "hf_vanilla" not in loaded["module"] and "modeling_vanilla" in loaded["module"]
    for key in ("greedy", "beam"):
        assert loaded[key] == expected[key], key
        assert [decoded(row) for row in loaded[key]] == answers, key
    assert_varied(torch.tensor(loaded["beam"]))

    refused = run_loader(folder, False, ids)
    assert refused["error"] == "ValueError" and "trust_remote_code" in refused["message"]


TOKENIZER_LOADER = """
import sys, json, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "hf_vanilla" or name.startswith("hf_vanilla."):
            raise ImportError("hf_vanilla is not installed here")
sys.meta_path.insert(0, Block())
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
model = AutoModelForSeq2SeqLM.from_pretrained(sys.argv[1], trust_remote_code=True)
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)
ids = tokenizer(sys.argv[2])["input_ids"]
print(json.dumps({"ids": ids, "text": tokenizer.decode(ids, skip_special_tokens=True), "model": type(model).__name__}))
"""


def test_the_readmes_two_lines_load_model_and_tokenizer_without_the_package_and_without_a_prompt(
    reversal_model_dir, tmp_path
):
    """The README's lines for a machine without hf_vanilla, `AutoModelForSeq2SeqLM` and `AutoTokenizer` each with
    trust_remote_code=True, in a process that cannot import the package and has no terminal: no "Do you wish to run
    the custom code?" prompt, and the tokenizer applies what its files say (a summarization tokenizer's lower case
    and prefix space) as the package's own does."""
    import shutil
    import subprocess
    import sys

    from hf_vanilla.tokenization import train_shared_bpe

    folder = tmp_path / "model"
    shutil.copytree(reversal_model_dir, folder)
    texts = ["The Agreement is attached", "see the agreement\nattached"] * 20
    tokenizer = train_shared_bpe(texts, 300, show_progress=False, prefix_space=True, lowercase=True)
    tokenizer.save_pretrained(folder)
    text = "Agreement\n\nATTACHED"
    done = subprocess.run(
        [sys.executable, "-c", TOKENIZER_LOADER, str(folder), text],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Do you wish to run the custom code" not in done.stdout + done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {
        "ids": tokenizer(text)["input_ids"],
        "text": " agreement attached",
        "model": "VanillaTransformerForConditionalGeneration",
    }
