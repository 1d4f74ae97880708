"""OpenNMT-py 3.5.1's copy generator with its rows patched (`benchmarks/peers/opennmt/summarization_table.py`'s
`COPY_IN_OWN_ROWS`, which onmt_train and onmt_translate run for a `copy_attn` model): each (sentence, step) row's copy
probability built from its own attention, checked against a per-row computation, where the released line 93 builds
it from another row's; the accuracy statistic's rows folded with their own sentence's dictionary; and the programs
that apply the patch. None of it needs OpenNMT-py: the patch's source is run with torch and stand-ins. The last test
runs the patch in OpenNMT-py 3.5.1's own environment against its own classes, and is skipped where that is absent."""

import functools
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from benchmarks.peers.common.venvs import DEFAULT_ROOT, venv_bin
from benchmarks.peers.opennmt import summarization_table as opennmt_summary

BATCH, STEPS, SOURCE, HIDDEN, VOCABULARY, EXTRA = 3, 4, 5, 8, 12, 6  # sentences, steps, source length, sizes


def defined(source: str, name: str, **names):
    """The function `name` that `source` defines, run with `names` (and torch) as its globals."""
    found = {"torch": torch, **names}
    exec(source, found)
    return found[name]


def upstream_copy():
    """CopyGenerator.forward as 3.5.1 releases it: the patch's own source with line 93 put back."""
    source = opennmt_summary.OWN_ROWS_COPY
    assert source.count(opennmt_summary.OWN_ROWS_COPY_LINE) == 1
    return defined(source.replace(opennmt_summary.OWN_ROWS_COPY_LINE, opennmt_summary.UPSTREAM_COPY_LINE),
                   "own_rows_copy")  # fmt: skip


def generator_modules() -> types.SimpleNamespace:
    """A copy generator's modules as CopyGenerator holds them: `linear`, `linear_copy` and `pad_idx`."""
    return types.SimpleNamespace(linear=torch.nn.Linear(HIDDEN, VOCABULARY), linear_copy=torch.nn.Linear(HIDDEN, 1),
                                 pad_idx=1)  # fmt: skip


def copy_inputs(batch: int, steps: int, seed: int = 0):
    """A copy generator's modules (`generator_modules`) and its inputs: `batch` x `steps` rows of decoder output and
    attention, batch-first as 3.5.1's decoder gives them (row b * steps + t), and each sentence's own map of its
    source positions to its dynamic dictionary."""
    torch.manual_seed(seed)
    generator = generator_modules()
    hidden = torch.randn(batch * steps, HIDDEN)
    attention = torch.softmax(torch.randn(batch * steps, SOURCE), dim=-1)
    source_map = torch.zeros(batch, SOURCE, EXTRA)
    for b in range(batch):  # a different source a sentence: its positions to dictionary entries drawn at random
        source_map[b, torch.arange(SOURCE), torch.randint(1, EXTRA, (SOURCE,))] = 1
    return generator, hidden, attention, source_map


def per_row_copy(generator, hidden, attention, source_map) -> torch.Tensor:
    """The pointer-generator's distribution row by row, in float64: row b * steps + t is sentence b's step t, its
    vocabulary part the softmax (padding excluded) times 1 - p, its copy part p times its own attention over sentence
    b's source mapped into sentence b's dictionary."""
    batch = source_map.size(0)
    steps = hidden.size(0) // batch
    weight, bias = generator.linear.weight.double(), generator.linear.bias.double()
    gate_weight, gate_bias = generator.linear_copy.weight.double()[0], generator.linear_copy.bias.double()[0]
    rows = []
    for b, t in ((b, t) for b in range(batch) for t in range(steps)):
        h, a = hidden[b * steps + t].double(), attention[b * steps + t].double()
        logits = weight @ h + bias
        logits[generator.pad_idx] = -float("inf")
        p = torch.sigmoid(gate_weight @ h + gate_bias)
        copy = torch.stack([sum(a[s] * source_map[b, s, c].double() for s in range(a.numel()))
                            for c in range(source_map.size(2))])  # fmt: skip
        rows.append(torch.cat([torch.softmax(logits, 0) * (1 - p), p * copy]))
    return torch.stack(rows).detach()


def test_each_row_s_copy_probability_is_built_from_its_own_attention():
    generator, hidden, attention, source_map = copy_inputs(BATCH, STEPS)
    expected = per_row_copy(generator, hidden, attention, source_map)
    patched = defined(opennmt_summary.OWN_ROWS_COPY, "own_rows_copy")(generator, hidden, attention, source_map)
    assert patched.shape == (BATCH * STEPS, VOCABULARY + EXTRA)
    torch.testing.assert_close(patched.double(), expected, rtol=1e-5, atol=1e-6)
    # 3.5.1's line reads the rows time-major: row b * steps + t gets the attention of row t * batch + b, so every
    # row but the first and the last (the rows that are their own) copies with another row's attention.
    released = upstream_copy()(generator, hidden, attention, source_map)
    torch.testing.assert_close(released[:, :VOCABULARY], patched[:, :VOCABULARY])  # the vocabulary part is the same
    wrong = [row for row in range(BATCH * STEPS)
             if not torch.allclose(released[row].double(), expected[row], rtol=1e-5, atol=1e-6)]  # fmt: skip
    assert wrong == list(range(1, BATCH * STEPS - 1))
    crossed = [row for row in range(BATCH * STEPS) if row // STEPS != (row % STEPS * BATCH + row // STEPS) // STEPS]
    assert set(crossed) <= set(wrong) and crossed  # some of them copy from another sentence's attention


def test_at_one_step_a_row_the_patched_line_is_the_released_one():
    generator, hidden, attention, source_map = copy_inputs(BATCH * 2, 1, seed=1)  # decoding: a beam row a step
    patched = defined(opennmt_summary.OWN_ROWS_COPY, "own_rows_copy")(generator, hidden, attention, source_map)
    torch.testing.assert_close(patched, upstream_copy()(generator, hidden, attention, source_map))
    torch.testing.assert_close(patched.double(), per_row_copy(generator, hidden, attention, source_map),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def marking_collapse(scores, batch, tgt_vocab, batch_dim=1):
    """A stand-in for 3.5.1's collapse_copy_scores that indexes its sentences as the real one does (copy_generator.py
    lines 12 and 27: `scores[:, b]` for batch_dim 1, `scores[b]` for 0) and writes into each sentence's rows, in its
    last column, the dictionary it folds them with (`batch["src_ex_vocab"][b]`)."""
    for b in range(scores.size(batch_dim)):
        score = scores[:, b] if batch_dim == 1 else scores[b]
        score[:, -1] = batch["src_ex_vocab"][b]
    return scores


def statistics_rows(unbottle, collapse) -> list[int]:
    """The dictionary LossCompute.forward's accuracy statistic folds each row with (its lines `scores_data =
    collapse_copy_scores(self._unbottle(scores.clone(), len(batch["srclen"])), batch, self.vocab)` and
    `self._bottle(scores_data)`), the rows batch-first: row b * steps + t."""
    scores = torch.zeros(BATCH * STEPS, VOCABULARY + EXTRA)
    batch = {"src_ex_vocab": [10 + b for b in range(BATCH)], "srclen": [SOURCE] * BATCH}
    folded = collapse(unbottle(None, scores.clone(), len(batch["srclen"])), batch, "vocab")
    return folded.view(-1, folded.size(2))[:, -1].int().tolist()


def test_the_accuracy_statistic_folds_each_sentence_s_rows_with_its_own_dictionary():
    unbottle = defined(opennmt_summary.OWN_ROWS_STATISTICS, "own_rows_unbottle", functools=functools,
                       collapse_copy_scores=marking_collapse)  # fmt: skip
    collapse = defined(opennmt_summary.OWN_ROWS_STATISTICS, "own_rows_collapse", functools=functools,
                       collapse_copy_scores=marking_collapse)  # fmt: skip
    assert statistics_rows(unbottle, collapse) == [10 + row // STEPS for row in range(BATCH * STEPS)]

    def released_unbottle(self, _v, batch_size):  # utils/loss.py, LossCompute._unbottle in 3.5.1
        return _v.view(-1, batch_size, _v.size(1))

    released = statistics_rows(released_unbottle, marking_collapse)  # collapse_copy_scores' default batch_dim 1
    assert released == [10 + row % BATCH for row in range(BATCH * STEPS)]  # row i * batch + j: sentence j's


def stand_in_onmt(monkeypatch) -> types.SimpleNamespace:
    """Stand-ins for the modules of OpenNMT-py that the copy programs import (the copy generator, the loss, the
    command lines' mains, the inference engine, the model and the translator), in `sys.modules`; their mains record
    what the generator and the loss run with at the time."""
    seen = types.SimpleNamespace(calls=[])

    class CopyGenerator:
        def forward(self, hidden, attn, src_map):
            return "released"

    class LossCompute:
        def _unbottle(self, _v, batch_size):
            return "released"

    def collapse_copy_scores(scores, batch, tgt_vocab, batch_dim=1):
        return batch_dim

    def main():
        loss = sys.modules["onmt.utils.loss"]
        seen.calls.append((sys.argv[0], CopyGenerator.forward, LossCompute._unbottle, loss.collapse_copy_scores))

    modules = {
        "onmt": {},
        "onmt.utils": {},
        "onmt.utils.loss": {"LossCompute": LossCompute, "collapse_copy_scores": collapse_copy_scores},
        "onmt.modules": {},
        "onmt.modules.copy_generator": {"CopyGenerator": CopyGenerator, "collapse_copy_scores": collapse_copy_scores},
        "onmt.bin": {},
        "onmt.bin.train": {"main": main},
        "onmt.bin.translate": {"main": main},
        "onmt.inference_engine": {"build_dynamic_dataset_iter": lambda *args, **kwargs: None},
        "onmt.models": {},
        "onmt.models.model": {"BaseModel": type("BaseModel", (), {"load_state_dict": lambda *args: None})},
        "onmt.translate": {},
        "onmt.translate.translator": {"Translator": type("Translator", (), {"_decode_and_generate": None})},
    }
    for name, contents in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(contents)
        monkeypatch.setitem(sys.modules, name, module)
        if "." in name:
            parent, _, child = name.rpartition(".")
            monkeypatch.setattr(sys.modules[parent], child, module, raising=False)
    seen.collapse = collapse_copy_scores
    return seen


@pytest.mark.parametrize("program, command", [("TRAIN_WITH_COPY", "onmt_train"),
                                              ("TRANSLATE_WITH_COPY", "onmt_translate")])  # fmt: skip
def test_training_and_decoding_both_run_with_the_patched_rows(monkeypatch, program, command):
    seen = stand_in_onmt(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["-c", "-config", "x.yaml"])
    exec(getattr(opennmt_summary, program), {"__name__": "__main__"})
    ((name, forward, unbottle, collapse),) = seen.calls
    assert name == command and forward.__name__ == "own_rows_copy" and unbottle.__name__ == "own_rows_unbottle"
    assert collapse.func is seen.collapse and collapse.keywords == {"batch_dim": 0}
    assert getattr(opennmt_summary, program).startswith(opennmt_summary.COPY_IN_OWN_ROWS)


def test_the_programs_run_for_a_copying_model_only(tmp_path):
    copying = {"pointer_generator": True}
    assert opennmt_summary.train_program(tmp_path, copying) == [str(tmp_path / "python"), "-c",
                                                                opennmt_summary.TRAIN_WITH_COPY]  # fmt: skip
    assert opennmt_summary.train_program(tmp_path, {"pointer_generator": False}) == [str(tmp_path / "onmt_train")]
    assert opennmt_summary.train_program(tmp_path, {}) == [str(tmp_path / "onmt_train")]  # translation's settings


def opennmt_python() -> Path | None:
    """The python of OpenNMT-py's environment (`ensure_venv`'s folder `opennmt`) under the default root, or under the
    workplace's /work/peer_venvs; None where neither holds one."""
    for root in (DEFAULT_ROOT, Path("/work/peer_venvs")):
        python = venv_bin(root, "opennmt") / "python"
        if python.exists():
            return python
    return None


# Run by OpenNMT-py's python: 3.5.1's own forward, _unbottle and LossCompute.forward on a batch of 3 sentences of 4
# steps, before and after the patch; what it finds is written to the file named by its argument.
REAL_CLASSES = r"""
import inspect, json, sys
import torch
import onmt
import onmt.utils.loss as loss
from onmt.modules.copy_generator import CopyGenerator, CopyGeneratorLoss

UPSTREAM, OWN, PATCH = json.loads(sys.argv[2])
lines, start = inspect.getsourcelines(CopyGenerator.forward)
code = [line.strip() for line in lines[1:] if line.strip() and not line.strip().startswith("#")]
code = code[code.index('\"\"\"', 1) + 1:] if code[0].startswith('\"\"\"') else code
found = {"version": onmt.__version__, "line": start + [line.strip() for line in lines].index(UPSTREAM),
         "code": code, "unbottle": inspect.getsource(loss.LossCompute._unbottle).strip().splitlines()[-1].strip()}

class Vocabulary(dict):  # a target vocabulary as collapse_copy_scores reads it: unknown words are <unk>, 0
    def __missing__(self, key):
        return 0

class Dictionary:  # a sentence's dynamic dictionary (src_ex_vocab)
    def __init__(self, tokens):
        self.ids_to_tokens = ["<unk>", *tokens]
    def __len__(self):
        return len(self.ids_to_tokens)

torch.manual_seed(0)
B, T, S, H = 3, 4, 5, 8
vocab = Vocabulary({w: i for i, w in enumerate(["<unk>", "<blank>", "<s>", "</s>", *[f"w{i}" for i in range(4, 12)]])})
sources = [["w4", "w5", "x0", "w6", "x1"], ["w7", "x2", "w8", "w9", "w4"], ["x3", "w10", "w11", "w5", "x4"]]
dictionaries = [Dictionary(list(dict.fromkeys(s))) for s in sources]
C = max(len(d) for d in dictionaries)
src_map = torch.zeros(B, S, C)
for b, s in enumerate(sources):
    for i, token in enumerate(s):
        src_map[b, i, dictionaries[b].ids_to_tokens.index(token)] = 1
targets = [["w5", "x0", "w11", "</s>"], ["x2", "w4", "</s>", "<blank>"], ["w10", "x4", "w6", "</s>"]]
tgt = torch.tensor([[2] + [vocab[w] for w in t] for t in targets]).unsqueeze(-1)
alignment = torch.tensor([[0] + [d.ids_to_tokens.index(w) if w in d.ids_to_tokens else 0 for w in t]
                          for d, t in zip(dictionaries, targets)])
batch = {"tgt": tgt, "alignment": alignment, "src_map": src_map, "srclen": torch.tensor([S] * B),
         "src_ex_vocab": dictionaries}
generator = CopyGenerator(H, len(vocab), 1)
output = torch.randn(B, T, H)
attn = torch.softmax(torch.randn(B, T, S) * 3, dim=-1)
compute = loss.LossCompute(CopyGeneratorLoss(len(vocab), False, unk_index=0, ignore_index=1), generator,
                           copy_attn=True, vocab=vocab)

def run():
    with torch.no_grad():
        scores = generator(output.view(-1, H), attn.view(-1, S), src_map)
        value, stats = compute(batch, output, {"copy": attn})
    return {"scores": scores.tolist(), "loss": value.item(), "correct": stats.n_correct}

found["released"] = run()
exec(PATCH, {})
found["patched"] = run()
found["inputs"] = {
    "weight": generator.linear.weight.tolist(), "bias": generator.linear.bias.tolist(),
    "gate_weight": generator.linear_copy.weight.tolist(), "gate_bias": generator.linear_copy.bias.tolist(),
    "output": output.view(-1, H).tolist(), "attn": attn.view(-1, S).tolist(), "src_map": src_map.tolist(),
    "tgt": tgt[:, 1:, 0].tolist(), "alignment": alignment[:, 1:].tolist(), "vocab": dict(vocab),
    "dictionaries": [d.ids_to_tokens for d in dictionaries],
}
with open(sys.argv[1], "w") as out:
    json.dump(found, out)
"""


def per_row_loss_and_accuracy(inputs: dict, scores: torch.Tensor) -> tuple[float, int]:
    """CopyGeneratorLoss (copy_attn_force false) summed over the rows, and the tokens the accuracy statistic counts
    right, row by row from the per-row `scores`: each row's copies folded into the vocabulary with its own sentence's
    dictionary, its target an extended id where the word is unknown but in its source."""
    vocab, steps = inputs["vocab"], len(inputs["tgt"][0])
    total, correct = 0.0, 0
    for row, score in enumerate(scores):
        b, t = divmod(row, steps)
        target, align = inputs["tgt"][b][t], inputs["alignment"][b][t]
        if target == vocab["<blank>"]:
            continue
        copied = (score[len(vocab) + align] if align else 0.0) + 1e-20
        total -= float(torch.log(copied + score[target] if target or not align else copied))
        folded = score.clone()
        for i, word in enumerate(inputs["dictionaries"][b][1:], start=1):
            if vocab.get(word, 0):
                folded[vocab[word]] += folded[len(vocab) + i]
                folded[len(vocab) + i] = 1e-10
        expected = len(vocab) + align if target == 0 and align else target
        correct += int(folded.argmax()) == expected
    return total, correct


def test_the_patch_against_opennmt_py_3_5_1_s_own_classes(tmp_path):
    python = opennmt_python()
    if python is None:
        pytest.skip(f"no OpenNMT-py environment: {venv_bin(DEFAULT_ROOT, 'opennmt')} or /work/peer_venvs/opennmt")
    lines = json.dumps([opennmt_summary.UPSTREAM_COPY_LINE, opennmt_summary.OWN_ROWS_COPY_LINE,
                        opennmt_summary.COPY_IN_OWN_ROWS])  # fmt: skip
    done = subprocess.run([str(python), "-c", REAL_CLASSES, str(tmp_path / "found.json"), lines], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((tmp_path / "found.json").read_text())
    if found["version"] != "3.5.1":
        pytest.skip(f"the environment holds OpenNMT-py {found['version']}, not 3.5.1")
    # The released forward is the patch's, line for line, but its line 93.
    assert found["line"] == 93
    own = [line.strip() for line in opennmt_summary.OWN_ROWS_COPY.strip().splitlines()[1:] if line.strip()]
    assert found["code"] == [opennmt_summary.UPSTREAM_COPY_LINE if line == opennmt_summary.OWN_ROWS_COPY_LINE else line
                             for line in own]  # fmt: skip
    assert found["unbottle"] == "return _v.view(-1, batch_size, _v.size(1))"
    inputs = found["inputs"]
    generator = generator_modules()
    with torch.no_grad():
        for module, weight, bias in ((generator.linear, "weight", "bias"),
                                     (generator.linear_copy, "gate_weight", "gate_bias")):  # fmt: skip
            module.weight.copy_(torch.tensor(inputs[weight]))
            module.bias.copy_(torch.tensor(inputs[bias]))
    expected = per_row_copy(generator, torch.tensor(inputs["output"]), torch.tensor(inputs["attn"]),
                            torch.tensor(inputs["src_map"]))  # fmt: skip
    patched, released = torch.tensor(found["patched"]["scores"]), torch.tensor(found["released"]["scores"])
    torch.testing.assert_close(patched.double(), expected, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(released.double(), expected, rtol=1e-5, atol=1e-6)
    loss, correct = per_row_loss_and_accuracy(inputs, expected)
    assert found["patched"]["loss"] == pytest.approx(loss, rel=1e-5) and found["patched"]["correct"] == correct
    assert found["released"]["loss"] != pytest.approx(loss, rel=1e-3)
