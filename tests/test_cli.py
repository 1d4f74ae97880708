"""The `hf-vanilla` console script."""

import json
import subprocess
import sys

import torch
from safetensors.torch import load_file

from conftest import tiny_model


def hf_vanilla(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hf_vanilla.cli", *args], capture_output=True, text=True, timeout=300)


def test_average_checkpoints_command_on_known_values(tmp_path):
    for step, value in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)):
        model = tiny_model()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(value)
        folder = tmp_path / f"checkpoint-{step:08d}"
        model.save_pretrained(folder / "model")
        (folder / "trainer_state.json").write_text(json.dumps({"step": step}))
    (tmp_path / ".tmp-checkpoint-00000005").mkdir()  # an unfinished save is ignored
    result = hf_vanilla("average-checkpoints", str(tmp_path), "--last", "3", "--output", str(tmp_path / "avg"))
    assert result.returncode == 0, result.stderr
    weights = load_file(str(tmp_path / "avg" / "model.safetensors"))
    assert all(torch.all(t == 14.0 / 3).item() for t in weights.values())


def test_scoring_commands_and_clear_errors(tmp_path):
    (tmp_path / "ref.txt").write_text("Die Katze sitzt auf der Matte.\n")
    (tmp_path / "tree.txt").write_text("(S (NP (NN cats)) (VP (VBP sleep)))\n")
    bleu = hf_vanilla("score-bleu", str(tmp_path / "ref.txt"), str(tmp_path / "ref.txt"))
    assert json.loads(bleu.stdout)["sacrebleu"] == 100.0
    evalb = hf_vanilla("score-evalb", str(tmp_path / "tree.txt"), str(tmp_path / "tree.txt"))
    assert json.loads(evalb.stdout)["f1"] == 100.0
    missing = hf_vanilla("score-bleu", str(tmp_path / "nope.txt"), str(tmp_path / "ref.txt"))
    assert missing.returncode != 0 and missing.stderr.strip().startswith("hf-vanilla: cannot read")
    assert "Traceback" not in missing.stderr
