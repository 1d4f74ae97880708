"""hf_vanilla <-> MarianMTModel (`hf_vanilla.convert`, `hf-vanilla import-marian` / `export-marian`): random Marian
configurations round-trip through both converters with the same logits on padded batches and the same weights; the
trained reversal model decodes the same tokens after conversion, also when it starts from pad and never generates it
as OPUS-MT models do; an OPUS-MT-shaped folder (SentencePiece MarianTokenizer) imports into a folder that loads with
AutoModelForSeq2SeqLM and as remote code; what hf_vanilla cannot represent is refused in one line naming the field.

Tolerances: logits agree up to the rounding of the model's depth and width (`tolerances.rounding_tolerance`), in
float32 and in float64, where that bound is 2^29 times smaller: what float32 leaves is rounding in two summation
orders, not a mapping error. Much larger weights (std 0.3 at d_model 128) amplify rounding, which the bound does not
allow for."""

import copy
import subprocess
import sys

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, MarianMTModel

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration
from hf_vanilla.convert import ConversionError, from_marian, to_marian
from hf_vanilla_cli import main as cli_main

from marian_checkout import random_marian
from remote_loader import run_loader
from reversal import assert_varied, decoded, reversal_batch, reversal_rows
from runs import batch, tiny_model
from tolerances import assert_close_up_to_rounding, transformer_sums

MARIAN_CONFIGS = {
    # (overrides of marian_checkout.random_marian, with a final_logits_bias)
    "relu-unscaled-1003": (
        dict(
            vocab_size=1003,
            d_model=32,
            encoder_layers=1,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            activation_function="relu",
            scale_embedding=False,
        ),
        False,
    ),
    "swish-scaled-517": (
        dict(
            vocab_size=517,
            d_model=64,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=8,
            decoder_attention_heads=8,
            encoder_ffn_dim=96,
            decoder_ffn_dim=96,
            activation_function="swish",
            scale_embedding=True,
        ),
        True,
    ),
    "swish-unscaled-250": (
        dict(
            vocab_size=250,
            d_model=48,
            encoder_layers=3,
            decoder_layers=1,
            encoder_attention_heads=6,
            decoder_attention_heads=6,
            encoder_ffn_dim=80,
            decoder_ffn_dim=80,
            activation_function="swish",
            scale_embedding=False,
        ),
        True,
    ),
    "gelu-scaled-301": (  # MarianConfig's own default activation
        dict(
            vocab_size=301,
            d_model=32,
            encoder_layers=2,
            decoder_layers=1,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            activation_function="gelu",
            scale_embedding=True,
        ),
        True,
    ),
    "silu-scaled-130": (
        dict(
            vocab_size=130,
            d_model=32,
            encoder_layers=1,
            decoder_layers=2,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=48,
            decoder_ffn_dim=48,
            activation_function="silu",
            scale_embedding=True,
        ),
        True,
    ),
    "relu-scaled-1000-wide": (
        dict(
            vocab_size=1000,
            d_model=128,
            encoder_layers=2,
            decoder_layers=3,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=256,
            decoder_ffn_dim=256,
            activation_function="relu",
            scale_embedding=True,
        ),
        True,
    ),
}


def padded_pair(vocab_size: int, pad: int, seed: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A right-padded source batch (pad = `pad`, </s> = 0 at each row's end) and decoder inputs starting from pad."""
    ids, mask = batch(seed=seed, lengths=(9, 4, 7, 2), vocab=vocab_size - 1)
    ids = ids.masked_fill(ids == 2, 0).masked_fill(mask == 0, pad)
    decoder = torch.randint(1, vocab_size - 1, (4, 6), generator=torch.Generator().manual_seed(seed))
    decoder[:, 0] = pad
    return ids, mask, decoder


def logits(model, ids, mask, decoder) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder).logits


@pytest.mark.parametrize("name", sorted(MARIAN_CONFIGS))
def test_random_marian_configurations_round_trip_with_equal_logits(name):
    overrides, with_bias = MARIAN_CONFIGS[name]
    assert overrides["vocab_size"] % 16  # a vocabulary 16 does not divide
    marian = random_marian(overrides.pop("vocab_size"), bias=with_bias, **overrides)
    ours = from_marian(marian).eval()
    back = to_marian(ours).eval()
    assert ours.config.final_logits_bias == with_bias
    assert ours.config.scale_embedding == overrides["scale_embedding"]
    assert ours.config.activation_function == overrides["activation_function"]
    pad = marian.config.pad_token_id
    ids, mask, decoder = padded_pair(marian.config.vocab_size, pad)
    assert (mask == 0).any()
    expected = logits(marian, ids, mask, decoder)
    assert expected.abs().max() > 3  # not a near-constant function
    sums = transformer_sums(ours.config)
    assert_close_up_to_rounding(logits(ours, ids, mask, decoder), expected, **sums)
    assert_close_up_to_rounding(logits(back, ids, mask, decoder), expected, **sums)
    # In float64 too, to a bound 2^29 times smaller: what float32 leaves is rounding, not a mapping error.
    marian64 = copy.deepcopy(marian).double()
    assert_close_up_to_rounding(
        logits(from_marian(marian64).eval(), ids, mask, decoder), logits(marian64, ids, mask, decoder), **sums
    )
    # The permutation and the fused projections are undone exactly: Marian -> hf_vanilla -> Marian is the identity.
    original, returned = marian.state_dict(), back.state_dict()
    assert original.keys() == returned.keys()
    for key in original:
        assert torch.equal(original[key], returned[key]), key
    # hf_vanilla -> Marian -> hf_vanilla too.
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), from_marian(back).state_dict().values()))


def test_a_plain_summarizers_stutter_rule_is_dropped_from_its_marian_export_with_a_warning(monkeypatch):
    from hf_vanilla import convert

    said = []
    monkeypatch.setattr(convert.logger, "warning", said.append)
    ours = tiny_model(task="summarization")
    assert ours.generation_config.no_stutter_span_size == 4
    back = to_marian(ours).generation_config
    assert not hasattr(back, "no_stutter_span_size")
    assert any(line.startswith("no_stutter_span_size=4 has no MarianMTModel equivalent") for line in said)


def test_generation_settings_survive_the_round_trip():
    marian = random_marian(300)
    ours = from_marian(marian)
    generation = ours.generation_config
    assert (generation.length_penalty_style, generation.max_length_offset) == ("power", None)
    assert generation.decoder_start_token_id == generation.pad_token_id == 299
    assert generation.bad_words_ids == [[299]] and generation.forced_eos_token_id == 0
    back = to_marian(ours).generation_config
    for field in (
        "bad_words_ids",
        "forced_eos_token_id",
        "num_beams",
        "max_length",
        "renormalize_logits",
        "decoder_start_token_id",
        "pad_token_id",
        "eos_token_id",
    ):
        assert getattr(back, field) == getattr(marian.generation_config, field), field


def test_reversal_model_decodes_the_same_tokens_through_both_converters(reversal_model):
    """The sentences are ones the model is checked to reverse both ways without the cache (`reversal_rows`): which
    5% a model trained to 95% gets wrong depends on the machine's rounding."""
    marian = to_marian(reversal_model).eval()
    again = from_marian(marian).eval()
    settings = dict(max_new_tokens=12, length_penalty=0.6, early_stopping=True, length_penalty_style="power")
    decodings = [{**settings, "num_beams": beams} for beams in (1, 4)]
    ids, mask, answers = reversal_rows(reversal_model, 4, [3, 10, 5, 8, 4, 7], *decodings)
    for beams in (1, 4):
        kwargs = dict(num_beams=beams, max_new_tokens=12, length_penalty=0.6, early_stopping=True)
        expected = reversal_model.generate(ids, attention_mask=mask, length_penalty_style="power", **kwargs)
        assert_varied(expected)
        assert [decoded(row) for row in expected.tolist()] == answers
        assert marian.generate(ids, attention_mask=mask, **kwargs).tolist() == expected.tolist(), beams
        assert again.generate(ids, attention_mask=mask, **kwargs).tolist() == expected.tolist(), beams


def test_a_model_that_starts_from_pad_decodes_as_marian(reversal_model):
    """OPUS-MT's setting: pad is the decoder's start token, is never generated, and pads the source. The reversal
    model is given that setting with its start token (id 1) as pad; Marian and the hf_vanilla model imported from it
    must decode the same tokens, the reversal answers (of sentences the model is checked to reverse without the
    cache, `reversal_rows`). (transformers 5's generate() infers no source mask from pad
    for encoder-decoder models, MarianMTModel included: the mask is passed.)"""
    marian = to_marian(reversal_model).eval()
    marian.config.pad_token_id = 1
    marian.generation_config.update(
        pad_token_id=1, decoder_start_token_id=1, bad_words_ids=[[1]], renormalize_logits=True, forced_eos_token_id=2
    )
    ours = from_marian(marian).eval()
    assert ours.config.decoder_start_token_id == ours.config.pad_token_id == 1
    assert ours.generation_config.bad_words_ids == [[1]]
    decodings = [{"num_beams": beams, "max_new_tokens": 12} for beams in (1, 4)]
    ids, mask, answers = reversal_rows(ours, 5, [3, 10, 5, 8, 4, 7], *decodings)
    ids = ids.masked_fill(mask == 0, 1)  # padded with pad
    for beams in (1, 4):
        expected = marian.generate(ids, attention_mask=mask, num_beams=beams, max_new_tokens=12)
        got = ours.generate(ids, attention_mask=mask, num_beams=beams, max_new_tokens=12)
        assert got.tolist() == expected.tolist(), beams
        assert (got[:, 0] == 1).all() and not any(1 in decoded(row) for row in got.tolist())  # starts from pad only
        assert [decoded(row) for row in got.tolist()] == answers


def test_pad_is_never_generated_even_where_it_is_the_best_token():
    marian = random_marian(200, seed=1)
    with torch.no_grad():
        marian.final_logits_bias[0, 199] = 50.0  # pad would win every step
    ours = from_marian(marian).eval()
    ids, mask, _ = padded_pair(200, 199)
    free = ours.generate(ids, attention_mask=mask, num_beams=1, max_new_tokens=5, bad_words_ids=None)
    assert (free[:, 1:-1] == 199).all()  # without the ban: pad (then </s>, forced), so the ban keeps it out below
    for beams in (1, 4):
        got = ours.generate(ids, attention_mask=mask, num_beams=beams, max_new_tokens=8)
        assert got.tolist() == marian.generate(ids, attention_mask=mask, num_beams=beams, max_new_tokens=8).tolist()
        for row in got.tolist():
            written = row[1 : row.index(0, 1) if 0 in row[1:] else None]  # up to </s> (id 0); pad fills after it
            assert written and 199 not in written, row


def hf_vanilla(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hf_vanilla_cli", *args], capture_output=True, text=True, timeout=300)


def test_import_marian_of_an_opus_mt_folder(opus_folder, tmp_path, capsys):
    cli_main(["import-marian", str(opus_folder), str(tmp_path / "imported")])
    assert capsys.readouterr().out.strip() == f"hf_vanilla model and tokenizer written to {tmp_path / 'imported'}"
    folder = tmp_path / "imported"
    marian = MarianMTModel.from_pretrained(opus_folder).eval()
    source_tokenizer = AutoTokenizer.from_pretrained(opus_folder)
    assert marian.config.vocab_size % 16
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert isinstance(model, VanillaTransformerForConditionalGeneration)
    assert type(tokenizer).__name__ == "MarianTokenizer"
    sentences = ["The house is small.", "I saw the man with the telescope yesterday.", "Good morning."]
    encoded = tokenizer(sentences, padding=True, return_tensors="pt")
    assert encoded.input_ids.tolist() == source_tokenizer(sentences, padding=True).input_ids
    assert (encoded.attention_mask == 0).any()
    pad = marian.config.pad_token_id
    decoder = torch.full((3, 5), pad)
    decoder[:, 1:] = encoded.input_ids[:, :4]
    sums = transformer_sums(model.config)
    assert_close_up_to_rounding(
        logits(model, encoded.input_ids, encoded.attention_mask, decoder),
        logits(marian, encoded.input_ids, encoded.attention_mask, decoder),
        **sums,
    )
    assert_close_up_to_rounding(
        logits(copy.deepcopy(model).double(), encoded.input_ids, encoded.attention_mask, decoder),
        logits(copy.deepcopy(marian).double(), encoded.input_ids, encoded.attention_mask, decoder),
        **sums,
    )
    expected = {beams: marian.generate(**encoded, num_beams=beams, max_new_tokens=12).tolist() for beams in (1, 4)}
    for beams in (1, 4):
        assert model.generate(**encoded, num_beams=beams, max_new_tokens=12).tolist() == expected[beams]
    assert len({tuple(row) for row in expected[1]}) == 3  # the rows differ
    # As remote code, in a process without hf_vanilla (its generation config: max_length 64).
    loaded = run_loader(folder, True, encoded.input_ids)
    assert "hf_vanilla" not in loaded["module"] and "modeling_vanilla" in loaded["module"]
    for key, beams in (("greedy", 1), ("beam", 4)):
        assert loaded[key] == marian.generate(**encoded, num_beams=beams).tolist(), key


def test_export_marian_writes_a_marian_folder_that_decodes_the_same(reversal_folder, reversal_model, tmp_path):
    result = hf_vanilla("export-marian", str(reversal_folder), str(tmp_path / "marian"))
    assert result.returncode == 0, result.stderr
    marian = MarianMTModel.from_pretrained(tmp_path / "marian").eval()
    assert AutoTokenizer.from_pretrained(tmp_path / "marian")("a b c").input_ids == [4, 5, 6, 2]
    ids, mask, answers = reversal_batch(seed=6, rows=5)
    decoder = torch.tensor([[1] + answer[:-1] + [0] * (11 - len(answer)) for answer in answers])
    assert_close_up_to_rounding(
        logits(marian, ids, mask, decoder),
        logits(reversal_model, ids, mask, decoder),
        **transformer_sums(reversal_model.config),
    )
    for beams in (1, 4):
        kwargs = dict(num_beams=beams, max_new_tokens=12, early_stopping=True, length_penalty=0.6)
        expected = reversal_model.generate(ids, attention_mask=mask, length_penalty_style="power", **kwargs)
        assert marian.generate(ids, attention_mask=mask, **kwargs).tolist() == expected.tolist()


# --- refusals -------------------------------------------------------------------------------------------------------

OUR_REFUSALS = {
    "norm_style": dict(norm_style="pre"),
    "position_embedding_type": dict(position_embedding_type="learned"),
    "tie_word_embeddings": dict(tie_word_embeddings=False),
    "layer_norm_eps": dict(layer_norm_eps=1e-6),
}
MARIAN_REFUSALS = {
    "share_encoder_decoder_embeddings": dict(share_encoder_decoder_embeddings=False),
    "decoder_vocab_size": dict(share_encoder_decoder_embeddings=True, decoder_vocab_size=150),
    "tie_word_embeddings": dict(tie_word_embeddings=False),
    "normalize_before": dict(normalize_before=True),
    "normalize_embedding": dict(normalize_embedding=True),
    "add_final_layer_norm": dict(add_final_layer_norm=True),
    "static_position_embeddings": dict(static_position_embeddings=False),
    "activation_function": dict(activation_function="prelu"),
    "decoder_attention_heads": dict(decoder_attention_heads=2),
    "decoder_ffn_dim": dict(decoder_ffn_dim=64),
    "encoder_layerdrop": dict(encoder_layerdrop=0.1),
    "decoder_layerdrop": dict(decoder_layerdrop=0.1),
}


def assert_one_line_naming(message: str, field: str) -> None:
    assert "\n" not in message and message.split("=")[0].split(": ")[-1] == field, message


@pytest.mark.parametrize("field", sorted(OUR_REFUSALS))
def test_to_marian_refuses_what_marian_cannot_compute(field):
    with pytest.raises(ConversionError) as error:
        to_marian(tiny_model(**OUR_REFUSALS[field]))
    assert_one_line_naming(str(error.value), field)


@pytest.mark.parametrize("field", sorted(MARIAN_REFUSALS))
def test_from_marian_refuses_what_hf_vanilla_cannot_compute(field):
    marian = small_marian()
    for name, value in MARIAN_REFUSALS[field].items():
        setattr(marian.config, name, value)
    with pytest.raises(ConversionError) as error:
        from_marian(marian)
    assert_one_line_naming(str(error.value), field)


def small_marian():
    return random_marian(
        200,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
    )


def test_command_line_refusals_are_one_line(tmp_path):
    for field, overrides in MARIAN_REFUSALS.items():
        marian = small_marian()
        for name, value in overrides.items():
            setattr(marian.config, name, value)
        marian.save_pretrained(tmp_path / field)
        with pytest.raises(SystemExit) as exit_:
            cli_main(["import-marian", str(tmp_path / field), str(tmp_path / "out")])
        message = str(exit_.value.code)
        assert message.startswith(f"hf-vanilla: cannot convert {tmp_path / field}: {field}="), message
        assert "\n" not in message
    for field, overrides in OUR_REFUSALS.items():
        tiny_model(**overrides).save_pretrained(tmp_path / field)
        with pytest.raises(SystemExit) as exit_:
            cli_main(["export-marian", str(tmp_path / field), str(tmp_path / "out")])
        message = str(exit_.value.code)
        assert message.startswith(f"hf-vanilla: cannot convert {tmp_path / field}: {field}="), message
        assert "\n" not in message
    assert not (tmp_path / "out").exists()
    # The real console script: one line on stderr, a non-zero exit, no traceback.
    result = hf_vanilla("import-marian", str(tmp_path / "activation_function"), str(tmp_path / "out"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"hf-vanilla: cannot convert {tmp_path / 'activation_function'}: activation_function='prelu': "
        "it has learned parameters, which hf_vanilla's feed-forward does not hold"
    ]
    for args, expected in (
        (["import-marian", str(tmp_path / "nowhere"), str(tmp_path / "out")], "no model at"),
        (["export-marian", str(tmp_path / "activation_function"), str(tmp_path / "out")], "not an hf_vanilla model"),
    ):
        with pytest.raises(SystemExit) as exit_:
            cli_main(args)
        message = str(exit_.value.code)
        assert message.startswith("hf-vanilla: ") and expected in message and "\n" not in message, message


def test_config_options_of_converted_models_are_validated():
    with pytest.raises(ValueError, match=r"activation_function='gelu2': not one of transformers' activations \(gelu,"):
        VanillaTransformerConfig.from_size("tiny", activation_function="gelu2")
    with pytest.raises(ValueError, match="activation_function='xielu': it has learned parameters"):
        VanillaTransformerConfig.from_size("tiny", activation_function="xielu")


def test_the_feed_forward_computes_the_configured_activation():
    """Against torch's own functions, independently of transformers' table of names."""
    exact_gelu = torch.nn.functional.gelu
    for name, function in (("relu", torch.relu), ("swish", torch.nn.functional.silu), ("gelu", exact_gelu)):
        ffn = tiny_model(activation_function=name).model.encoder.layers[0].feed_forward
        x = torch.randn(3, 5, ffn.fc1.weight.shape[1], generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            expected = function(x @ ffn.fc1.weight.T + ffn.fc1.bias) @ ffn.fc2.weight.T + ffn.fc2.bias
            torch.testing.assert_close(ffn(x), expected, rtol=1e-6, atol=1e-6)


def test_a_marian_position_table_that_is_not_the_sinusoids_is_refused():
    """Marian recomputes its sinusoids when it builds a model but loads a table that a checkpoint holds: an untouched
    table converts (in float32 and float16), an edited one, even by far less than the logits' tolerance, is refused
    in one line naming it and the largest difference."""
    from_marian(small_marian())
    from_marian(small_marian().half())
    for name in ("encoder", "decoder"):
        marian = small_marian()
        with torch.no_grad():
            getattr(marian.model, name).embed_positions.weight[7, 3] += 1e-5
        with pytest.raises(ConversionError) as error:
            from_marian(marian)
        message = str(error.value)
        assert message.startswith(
            f"model.{name}.embed_positions.weight is not Marian's sinusoid table (max difference 1e-05"
        )
        assert "\n" not in message
