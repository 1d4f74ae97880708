"""A saved folder loads with trust_remote_code in a process where hf_vanilla cannot be imported, and decodes there as
the package does: the reversal model's greedy and beam decodings of a padded batch, token for token."""

import json

import torch

from remote_loader import run_loader
from reversal import assert_varied, decoded, reversal_batch


def test_remote_code_load_decodes_identically_and_refuses_without_trust(reversal_model, reversal_model_dir):
    folder = reversal_model_dir
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSeq2SeqLM"] == "modeling_vanilla.VanillaTransformerForConditionalGeneration"
    for name in ("modeling_vanilla.py", "configuration_vanilla.py"):
        assert (folder / name).exists(), name
    ids, mask, answers = reversal_batch(seed=8, rows=5, lengths=(3, 10))
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
