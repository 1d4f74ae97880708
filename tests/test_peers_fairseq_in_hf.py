"""`benchmarks/peers/fairseq/in_hf.py`: a fairseq `transformer` state (fairseq's names, its dictionary's row order, its
split q/k/v projections, one position table) becomes the same hf_vanilla model, and the teacher-forced NLL is the
model's own cross-entropy. No test needs fairseq's environment: the fairseq state is written here from a model."""

import re

import pytest
import torch
from datasets import Dataset

from benchmarks.peers import translation as translation_task
from benchmarks.peers.fairseq import in_hf as convert
from runs import batch, tiny_model


def fairseq_state(model, row_ids: list[int]) -> dict:
    """`model`'s weights under fairseq's names: embedding rows in fairseq's dictionary order (row i is token
    `row_ids[i]`), W^Q/W^K/W^V as three projections, the encoder's position table as fairseq's one table."""
    fs = {"encoder.embed_tokens.weight": model.model.shared.weight[row_ids].clone()}
    fs["positions"] = model.model.encoder.embed_positions.table.weight.clone()
    for name, value in model.state_dict().items():
        found = re.fullmatch(r"model\.((?:en|de)coder\.layers\.\d+)\.(.+)\.(weight|bias)", name)
        if not found:
            continue
        layer, module, part = found.groups()
        module = module.replace("feed_forward.", "")
        if module.endswith(("qkv_proj", "kv_proj")):
            attention, fused = module.split(".")
            for letter, chunk in zip(fused[: -len("_proj")], value.chunk(len(fused) - len("_proj"))):
                fs[f"{layer}.{attention}.{letter}_proj.{part}"] = chunk.clone()
        else:
            fs[f"{layer}.{module}.{part}"] = value.clone()
    return fs


@pytest.fixture(scope="module")
def fairseq_order():
    """A dictionary order: fairseq's <s> <pad> </s> <unk> first (the tiny model's ids 1, 0, 2, 3), then the other
    ids shuffled."""
    rest = (torch.randperm(1000 - 4, generator=torch.Generator().manual_seed(3)) + 4).tolist()
    return [1, 0, 2, 3, *rest]


def test_fairseq_weights_make_the_same_model(fairseq_order):
    original = tiny_model(position_embedding_type="learned")
    with torch.no_grad():  # fairseq has one position table for both sides
        original.model.decoder.embed_positions.table.weight.copy_(original.model.encoder.embed_positions.table.weight)
    mapped = convert.mapped_model(fairseq_state(original, fairseq_order), original.config, fairseq_order)
    ids, mask = batch(lengths=(7, 4, 6))
    decoder_ids, _ = batch(seed=2, lengths=(5, 5, 3))
    # The same weights in the same operations: equal to float32 rounding.
    torch.testing.assert_close(
        mapped(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_ids).logits,
        original(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_ids).logits,
    )
    assert mapped.lm_head.weight.data_ptr() == mapped.model.shared.weight.data_ptr()  # tied, as fairseq's


def test_a_state_that_does_not_fit_is_refused(fairseq_order):
    original = tiny_model(position_embedding_type="learned")
    fs = fairseq_state(original, fairseq_order)
    fs["encoder.layers.0.self_attn.extra.weight"] = fs.pop("encoder.layers.0.self_attn_layer_norm.weight")
    with pytest.raises(KeyError, match="self_attn_layer_norm"):
        convert.mapped_model(fs, original.config, fairseq_order)


def test_fairseq_rows_are_the_tokenizer_s_ids(tmp_path):
    texts = Dataset.from_list([{"translation": {"en": "The light was good.", "de": "Das Licht war gut."}}] * 3)
    tokenizer = translation_task.translation_tokenizer(tmp_path / "tokenizer", texts, 300)
    pieces = [piece for piece, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: -item[1])]
    pieces = [piece for piece in pieces if piece not in tokenizer.all_special_tokens]
    rows = convert.fairseq_rows_to_ids(pieces, tokenizer)
    specials = [tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id]
    assert rows[:4] == specials
    assert tokenizer.convert_ids_to_tokens(rows[4:]) == pieces
    with pytest.raises(ValueError, match="1 of fairseq's pieces are not the tokenizer's \\(first: 'Ġzebra'\\)"):
        convert.fairseq_rows_to_ids([*pieces, "Ġzebra"], tokenizer)


def test_reference_nll_is_the_model_s_cross_entropy():
    model = tiny_model(label_smoothing=0.0)
    generator = torch.Generator().manual_seed(5)
    pairs = [
        (torch.randint(4, 1000, (n,), generator=generator).tolist() + [2],
         torch.randint(4, 1000, (m,), generator=generator).tolist() + [2])
        for n, m in ((3, 6), (8, 2), (5, 5), (1, 9), (6, 4))
    ]  # fmt: skip
    start = model.config.decoder_start_token_id
    with torch.no_grad():  # each pair alone: the model's own mean loss times its tokens
        sums = [model(input_ids=torch.tensor([s]), labels=torch.tensor([t])).loss.item() * len(t) for s, t in pairs]
    expected = sum(sums) / sum(len(t) for _, t in pairs)
    # Batches of 2 pad differently from one pair at a time: float32 sums of about 50 terms of size ~7.
    assert convert.reference_nll(model, pairs, start, batch=2) == pytest.approx(expected, rel=1e-5)


def test_a_tensor_with_no_place_is_refused(fairseq_order):
    """A pointer-generator's p_gen projection, or a layer beyond the config's, is named, not dropped."""
    original = tiny_model(position_embedding_type="learned")
    for extra in ("decoder.project_p_gens.weight", f"decoder.layers.{original.config.decoder_layers}.fc1.weight"):
        fs = fairseq_state(original, fairseq_order) | {extra: torch.zeros(3)}
        expected = f"1 of fairseq's tensors have no place in a `transformer` (first: {extra})"
        with pytest.raises(ValueError, match=re.escape(expected)):
            convert.mapped_model(fs, original.config, fairseq_order)


def test_tied_copies_and_device_markers_are_accepted(fairseq_order):
    """fairseq saves the tied decoder embedding and output projection, a `_float_tensor` a position module and a
    `version` a stack, float tensors all."""
    original = tiny_model(position_embedding_type="learned")
    fs = fairseq_state(original, fairseq_order)
    fs |= {
        "decoder.embed_tokens.weight": fs["encoder.embed_tokens.weight"],
        "decoder.output_projection.weight": fs["encoder.embed_tokens.weight"],
        "encoder.embed_positions._float_tensor": torch.zeros(1),
        "encoder.version": torch.tensor([3.0]),
        "decoder.version": torch.tensor([3.0]),
    }
    mapped = convert.mapped_model(fs, original.config, fairseq_order)
    torch.testing.assert_close(mapped.model.shared.weight, original.model.shared.weight)


@pytest.mark.parametrize("system", ["fairseq", "fairseq-no-copy"])
def test_fairseq_checkpoints_are_found_for_either_system(tmp_path, system):
    folder = tmp_path / system / "checkpoints"
    folder.mkdir(parents=True)
    for name in ("checkpoint_10_1000.pt", "checkpoint_2_500.pt", "checkpoint_last.pt", "averaged.pt"):
        (folder / name).touch()
    found = convert.fairseq_checkpoints(tmp_path)
    assert [path.name for path in found] == ["checkpoint_2_500.pt", "checkpoint_10_1000.pt", "averaged.pt"]
