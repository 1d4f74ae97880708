"""Attention weights: `output_attentions=True` returns them under the default SDPA implementation too (the call runs
eager attention), equal to an eager model's and without changing the outputs; `hf-vanilla attention` writes PNG
heatmaps and the matrices it plotted, which are the model's attentions for the sentence pair."""

import copy

import numpy as np
import pytest
import torch

from hf_vanilla.attention_plots import KINDS, attention_maps, p_gen_figure
from hf_vanilla_cli import main as cli_main

from reversal import reversal_tokenizer, reversed_text
from runs import batch, tiny_model
from tolerances import assert_close_up_to_rounding, pointer_sums, transformer_sums

pytest.importorskip("matplotlib", reason="attention plots need matplotlib (pip install 'hf-vanilla[plots]')")

# Candidate sources of 8 symbols for `reversed_text`.
EIGHT = ["a b c d e f g h", "i j k l m n o p", "q r s t u v w x", "x w v u t s r q", "h g f e d c b a"]


def test_output_attentions_under_sdpa_are_the_eager_weights():
    model = tiny_model()
    assert model.config._attn_implementation == "sdpa"
    eager = copy.deepcopy(model)
    eager.set_attn_implementation("eager")
    ids, mask = batch(seed=2, lengths=(7, 4, 6))
    decoder = ids[:, :5].clone()
    decoder[:, 0] = 1
    inputs = dict(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder)
    with torch.no_grad():
        plain = model(**inputs)
        ours = model(**inputs, output_attentions=True)
        theirs = eager(**inputs, output_attentions=True)
    assert model.config._attn_implementation == "sdpa"  # only that call ran eager
    assert_close_up_to_rounding(ours.logits, plain.logits, **transformer_sums(model.config))  # eager against SDPA
    for kind in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
        weights = getattr(ours, kind)
        assert len(weights) == 2 and weights[0].shape[:2] == (3, 4), kind
        for a, b in zip(weights, getattr(theirs, kind), strict=True):
            assert torch.equal(a, b), kind  # the same eager code on the same inputs in one process: bit for bit
            # Each row is divided by its sum (one sum of at most 7 terms) and summed again: 1 up to rounding.
            assert_close_up_to_rounding(a.sum(-1), torch.ones(a.shape[:-1]), depth=2, width=a.shape[-1])
    padded = (mask == 0)[:, None, None, :]
    assert all((w.masked_select(padded) == 0).all() for w in ours.encoder_attentions + ours.cross_attentions)
    future = torch.ones(5, 5, dtype=torch.bool).triu(1)
    assert all((w[..., future] == 0).all() for w in ours.decoder_attentions)
    assert plain.encoder_attentions is None  # not asked for: none computed

    generated = model.generate(
        ids, attention_mask=mask, num_beams=1, max_new_tokens=4, output_attentions=True, return_dict_in_generate=True
    )
    assert len(generated.cross_attentions) == 4 and len(generated.encoder_attentions) == 2
    assert (
        generated.sequences.tolist()
        == model.generate(ids, attention_mask=mask, num_beams=1, max_new_tokens=4).tolist()
    )


def test_attention_command_plots_the_models_weights(reversal_folder, reversal_model, tmp_path, capsys):
    tokenizer = reversal_tokenizer()
    # A source of 8 symbols that the model reverses under its generation config (checked, `reversed_text`: which 5%
    # a model trained to 95% gets wrong depends on the machine's rounding).
    source_text = reversed_text(reversal_model, EIGHT, {})
    reversal = " ".join(source_text.split()[::-1])
    for target in (reversal, None):
        output = tmp_path / ("given" if target else "decoded")
        args = ["attention", str(reversal_folder), "--source", source_text, "--output", str(output)]
        cli_main(args + (["--target", target] if target else []))
        assert "9 plots" in capsys.readouterr().out  # 3 kinds x (2 layers + the mean)
        pngs = sorted(output.glob("*.png"))
        assert len(pngs) == 9 and all(
            p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000 for p in pngs
        )
        saved = np.load(output / "attention.npz")
        assert saved["source_tokens"].tolist() == [*source_text.split(), "</s>"]
        # The reversal model's own decoding is the reversed source: the same decoder tokens either way.
        assert saved["decoder_tokens"].tolist() == ["<s>", *reversal.split()]

        # The model's weights, computed here independently with eager attention.
        eager = copy.deepcopy(reversal_model)
        eager.set_attn_implementation("eager")
        source = tokenizer(source_text, return_tensors="pt").input_ids
        decoder = torch.tensor([[1] + tokenizer(reversal).input_ids[:-1]])
        with torch.no_grad():
            out = eager(input_ids=source, decoder_input_ids=decoder, output_attentions=True)
        for kind, weights in zip(KINDS, (out.encoder_attentions, out.decoder_attentions, out.cross_attentions)):
            expected = torch.cat(weights).numpy()  # (layers, heads, rows, columns)
            assert saved[kind].shape == expected.shape == (2, 4, *saved[kind].shape[2:])
            np.testing.assert_array_equal(saved[kind], expected)  # the same eager code on the same inputs: bit for bit
    # Reversal: in the last layer, some cross-attention head puts its weight on the source token being copied.
    cross = saved["cross_attention"][-1, :, :8]  # (heads, decoder positions 0-7, 9 source tokens)
    copied = np.arange(7, -1, -1)  # decoder position i writes source token 7 - i
    assert max((head.argmax(-1) == copied).mean() for head in cross) >= 0.75


def test_attention_command_errors_are_one_line(reversal_folder, tmp_path):
    for args, expected in (
        (["--source", " "], "--source is empty"),
        (["--source", "a b"], "no model at"),
    ):
        folder = str(reversal_folder) if "empty" in expected else str(tmp_path / "nowhere")
        with pytest.raises(SystemExit) as exit_:
            cli_main(["attention", folder, *args, "--output", str(tmp_path / "plots")])
        message = str(exit_.value.code)
        assert message.startswith("hf-vanilla: ") and expected in message and "\n" not in message, message


def test_attention_maps_of_a_given_pair_are_teacher_forced(reversal_model):
    maps = attention_maps(reversal_model, reversal_tokenizer(), "a b c", "x y z")
    assert maps.source_tokens == ["a", "b", "c", "</s>"] and maps.decoder_tokens == ["<s>", "x", "y", "z"]
    assert maps.cross_attention.shape == (2, 4, 4, 4) and maps.decoder_self_attention.shape == (2, 4, 4, 4)
    assert maps.axes("cross_attention") == (maps.decoder_tokens, maps.source_tokens)


def test_a_pointer_generators_p_gen_is_plotted_for_each_output_token(
    summarization_folder, summarization_model, tmp_path, capsys
):
    """p_gen.png beside the heatmaps; the bars (one per output token, </s> included) are the model's p_gen from a
    forward pass over the same pair, in [0, 1], some of them far from 1 (the copy task is learned by copying)."""
    tokenizer = reversal_tokenizer()
    output = tmp_path / "plots"
    # A source of 6 symbols the model reverses under its summarization row (checked, `reversed_text`).
    source_text = reversed_text(summarization_model, [" ".join(text.split()[:6]) for text in EIGHT], {})
    reversal = source_text.split()[::-1]
    cli_main(["attention", str(summarization_folder), "--source", source_text, "--output", str(output)])
    assert "10 plots" in capsys.readouterr().out  # 3 kinds x (2 layers + the mean), and p_gen.png
    assert (output / "p_gen.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = np.load(output / "attention.npz")
    assert saved["target_tokens"].tolist() == [*reversal, "</s>"]  # its own decoding: the reversal

    source = tokenizer(source_text, return_tensors="pt").input_ids
    decoder = torch.tensor([[1] + tokenizer(" ".join(reversal)).input_ids[:-1]])
    with torch.no_grad():
        out = summarization_model(input_ids=source, decoder_input_ids=decoder, output_attentions=True)
    # The same code on the same inputs, up to rounding (the CLI's pass and this one may take other kernels), compared
    # as the gate's logit: rounding is absolute there, while a saturated p_gen shrinks it by p_gen (1 - p_gen).
    plotted, computed = (torch.logit(torch.as_tensor(p).double()) for p in (saved["p_gen"], out.p_gen[0]))
    assert_close_up_to_rounding(plotted, computed, dtype=torch.float32, **pointer_sums(summarization_model.config))
    assert ((0 <= saved["p_gen"]) & (saved["p_gen"] <= 1)).all() and saved["p_gen"].min() < 0.5

    maps = attention_maps(summarization_model, tokenizer, source_text)
    (axis,) = p_gen_figure(maps).axes
    assert [bar.get_height() for bar in axis.patches] == maps.p_gen.tolist()
    assert [label.get_text() for label in axis.get_xticklabels()] == [*reversal, "</s>"]
    assert axis.get_ylim() == (0.0, 1.0)


def test_maps_of_a_plain_model_hold_no_p_gen_and_a_long_source_can_be_cut(reversal_model):
    maps = attention_maps(reversal_model, reversal_tokenizer(), "a b c d e", "e d c", max_source_tokens=3)
    assert maps.p_gen is None and maps.target_tokens is None
    assert maps.source_tokens == ["a", "b", "</s>"] and maps.cross_attention.shape[-1] == 3
    with pytest.raises(ValueError, match="not a pointer-generator"):
        p_gen_figure(maps)


def test_every_heatmap_has_a_colour_bar_of_attention_weights():
    """Each panel carries a colour bar (the app's heatmap and the PNGs): without one the shades have no scale."""
    from matplotlib.figure import Figure

    from hf_vanilla.attention_plots import _heatmap

    figure = Figure()
    axis = figure.subplots()
    _heatmap(axis, np.array([[0.2, 0.8], [0.6, 0.4]]), ["a", "b"], ["x", "y"], "a panel")
    (bar,) = [other for other in figure.axes if other is not axis]
    assert bar.get_ylabel() == "attention weight" and bar.get_ylim() == pytest.approx((0.0, 0.8))
