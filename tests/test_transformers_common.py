"""transformers' own common model tests against hf_vanilla: the `ModelTesterMixin`, `GenerationTesterMixin` and
`ConfigTester` that models in transformers pass, of the installed release (`transformers_sources.py` says where they
come from: never this repository), with a tester of tiny sizes written the way transformers'
`tests/models/marian/test_modeling_marian.py` writes `MarianModelTester`, for both models: the paper's
(`VanillaTransformerTest`) and the pointer-generator (`VanillaPointerGeneratorTest`).

Each skip and class attribute is set the way Marian's test sets them, with its reason in one line; what hf_vanilla
deliberately does differently from transformers' defaults is in `docs/model.md` ("Where hf_vanilla differs from
transformers' defaults") and tested by the functions at the end of this file. Without a transformers checkout
(`HF_VANILLA_TRANSFORMERS_TESTS`) the generation mixin is not there (the source distribution lacks it): its tests do
not run, which `test_generation_tests_are_there_or_said_missing` reports."""

import tempfile
import unittest
from unittest.mock import patch

import pytest
import torch
from safetensors.torch import load_file as safe_load_file
from safetensors.torch import save_file as safe_save_file
from transformers.models.auto import modeling_auto

from hf_vanilla import VanillaTransformerConfig, VanillaTransformerForConditionalGeneration, VanillaTransformerModel
from hf_vanilla.modeling_vanilla import CACHE_NAME

from transformers_sources import CHECKOUT_VARIABLE, Unavailable, load

try:
    RELEASE_TESTS = load()
except Unavailable as error:
    pytest.skip(f"transformers' common model tests: {error}", allow_module_level=True)

ModelTesterMixin = RELEASE_TESTS.modeling.ModelTesterMixin
GenerationTesterMixin = RELEASE_TESTS.modeling.GenerationTesterMixin
ConfigTester = RELEASE_TESTS.configuration.ConfigTester
ids_tensor = RELEASE_TESTS.modeling.ids_tensor
# A model of transformers is listed by class name in the auto mappings' name tables, which the common tests read to
# know a base model (no loss, no head) from a sequence-to-sequence LM (labels, the loss): hf_vanilla's classes are
# listed there for the tests' duration, as they would be were the model in transformers.
AUTO_MAPPING_NAMES = {
    "MODEL_MAPPING_NAMES": VanillaTransformerModel,
    "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES": VanillaTransformerForConditionalGeneration,
}
MISSING = (
    f"not in {RELEASE_TESTS.origin} (transformers' source distribution ships tests/*.py only): set "
    f"{CHECKOUT_VARIABLE} to a checkout of the release to run them"
)


def prepare_vanilla_inputs_dict(config, input_ids, decoder_input_ids, attention_mask=None):
    """As Marian's `prepare_marian_inputs_dict`, the decoder's mask included: the source's (all ones, as the sources
    hold no padding), so that a decoder prompt that `generate()` extends with the start token keeps a mask that
    lines up with it."""
    if attention_mask is None:
        attention_mask = input_ids.ne(config.pad_token_id)
    return {
        "input_ids": input_ids,
        "decoder_input_ids": decoder_input_ids,
        "attention_mask": attention_mask,
        "decoder_attention_mask": attention_mask,
    }


class VanillaTransformerModelTester:
    """Marian's tester's sizes and special tokens (its `MarianModelTester`), in `VanillaTransformerConfig`'s names."""

    def __init__(
        self,
        parent,
        batch_size=13,
        seq_length=7,
        is_training=True,
        vocab_size=99,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=4,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        eos_token_id=2,
        pad_token_id=1,
        bos_token_id=0,
        decoder_start_token_id=3,
        pointer_generator=False,
        label_smoothing=0.1,
    ):
        self.parent = parent
        self.batch_size = batch_size
        self.seq_length = seq_length
        self.is_training = is_training
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        # A pointer-generator copies with the attention weights: its config refuses attention dropout.
        self.attention_probs_dropout_prob = 0.0 if pointer_generator else attention_probs_dropout_prob
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id
        self.bos_token_id = bos_token_id
        self.decoder_start_token_id = decoder_start_token_id
        self.pointer_generator = pointer_generator
        self.label_smoothing = label_smoothing

    def prepare_config_and_inputs(self):
        input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size).clamp(4)
        input_ids[:, -1] = self.eos_token_id
        decoder_input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        config = self.get_config()
        return config, prepare_vanilla_inputs_dict(config, input_ids, decoder_input_ids)

    def get_config(self):
        return VanillaTransformerConfig(
            vocab_size=self.vocab_size,
            d_model=self.hidden_size,
            encoder_layers=self.num_hidden_layers,
            decoder_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            d_ff=self.intermediate_size,
            dropout=self.hidden_dropout_prob,
            attention_dropout=self.attention_probs_dropout_prob,
            eos_token_id=self.eos_token_id,
            bos_token_id=self.bos_token_id,
            pad_token_id=self.pad_token_id,
            decoder_start_token_id=self.decoder_start_token_id,
            pointer_generator=self.pointer_generator,
            label_smoothing=self.label_smoothing,
        )

    def prepare_config_and_inputs_for_common(self):
        return self.prepare_config_and_inputs()

    def create_and_check_decoder_model_past_large_inputs(self, config, inputs_dict):
        """Marian's check: three more decoder positions read from the cache give the uncached hidden states."""
        model = VanillaTransformerModel(config).eval()
        encoder_states = model.get_encoder()(inputs_dict["input_ids"], inputs_dict["attention_mask"])[0]
        decoder = model.decoder
        input_ids = inputs_dict["decoder_input_ids"]
        context = dict(encoder_hidden_states=encoder_states, encoder_attention_mask=inputs_dict["attention_mask"])
        past = decoder(input_ids, use_cache=True, **context).past_key_values
        next_tokens = ids_tensor((self.batch_size, 3), config.vocab_size)
        uncached = decoder(torch.cat([input_ids, next_tokens], dim=-1), **context).last_hidden_state
        cached = decoder(next_tokens, past_key_values=past, **context).last_hidden_state
        self.parent.assertEqual(cached.shape[1], next_tokens.shape[1])
        torch.testing.assert_close(cached, uncached[:, -3:], atol=1e-4, rtol=1e-4)

    def check_encoder_decoder_model_standalone(self, config, inputs_dict):
        """Marian's check: the encoder and the decoder, saved and loaded on their own, compute what the model does."""
        model = VanillaTransformerModel(config).eval()
        outputs = model(**inputs_dict)
        with tempfile.TemporaryDirectory() as folder:
            model.get_encoder().save_pretrained(folder)
            encoder = type(model.get_encoder()).from_pretrained(folder).eval()
        encoder_states = encoder(inputs_dict["input_ids"], attention_mask=inputs_dict["attention_mask"])[0]
        torch.testing.assert_close(encoder_states, outputs.encoder_last_hidden_state, atol=1e-4, rtol=1e-4)
        with tempfile.TemporaryDirectory() as folder:
            model.decoder.save_pretrained(folder)
            decoder = type(model.decoder).from_pretrained(folder).eval()
        decoder_states = decoder(
            input_ids=inputs_dict["decoder_input_ids"],
            attention_mask=inputs_dict["decoder_attention_mask"],
            encoder_hidden_states=outputs.encoder_last_hidden_state,
            encoder_attention_mask=inputs_dict["attention_mask"],
        )[0]
        torch.testing.assert_close(decoder_states, outputs.last_hidden_state, atol=1e-4, rtol=1e-4)


class VanillaTransformerTest(ModelTesterMixin, GenerationTesterMixin, unittest.TestCase):
    """The paper's model, as Marian's `MarianModelTest` (without its pipeline mixin: transformers 5 has no
    sequence-to-sequence pipeline)."""

    all_model_classes = (VanillaTransformerModel, VanillaTransformerForConditionalGeneration)
    is_encoder_decoder = True
    pointer_generator = False

    @classmethod
    def setUpClass(cls):
        for table, model_class in AUTO_MAPPING_NAMES.items():
            listed = patch.dict(
                getattr(modeling_auto, table), {VanillaTransformerConfig.model_type: model_class.__name__}
            )
            listed.start()
            cls.addClassCleanup(listed.stop)

    def setUp(self):
        self.model_tester = VanillaTransformerModelTester(self, pointer_generator=self.pointer_generator)
        self.config_tester = ConfigTester(self, config_class=VanillaTransformerConfig)

    def test_config(self):
        if "utils.test_configuration_utils" in RELEASE_TESTS.stand_ins:
            # Its one check that reads transformers' common arguments runs in `test_config_common_kwargs`.
            self.config_tester.check_config_arguments_init = lambda: None
        self.config_tester.run_common_tests()

    def test_config_common_kwargs(self):
        if "utils.test_configuration_utils" in RELEASE_TESTS.stand_ins:
            self.skipTest(f"transformers' config_common_kwargs (tests/utils/test_configuration_utils.py): {MISSING}")
        self.config_tester.check_config_arguments_init()

    def test_generation_tests_are_there_or_said_missing(self):
        if not RELEASE_TESTS.has_generation_tests:
            self.skipTest(f"GenerationTesterMixin (tests/generation/test_utils.py): {MISSING}")
        self.assertTrue(hasattr(self, "test_greedy_generate"))

    def test_generation_tester_mixin_inheritance(self):
        if not RELEASE_TESTS.has_generation_tests:
            self.skipTest(f"GenerationTesterMixin (tests/generation/test_utils.py): {MISSING}")
        super().test_generation_tester_mixin_inheritance()

    # Deliberate (docs/model.md): a new model decodes with the paper's beam search, where these tests assume greedy
    # decoding (`test_greedy_generate_continues_its_cache_and_compiles_whole` in test_modeling.py checks them).
    @unittest.skip(reason="the default decoding is the paper's beam search: its prefix is not its next call's")
    def test_generate_continue_from_past_key_values(self):
        pass

    @unittest.skip(reason="transformers compiles greedy decoding's forward, never beam search's (the default here)")
    def test_generate_compile_model_forward_fullgraph(self):
        pass

    @unittest.skip(reason="transformers compiles greedy decoding's forward, never beam search's (the default here)")
    def test_static_cache_no_recompile_with_smaller_length(self):
        pass

    def test_encoder_decoder_loss_no_double_shift(self):
        # Deliberate (docs/model.md): the loss is label-smoothed by default (epsilon_ls = 0.1); the oracle is plain CE.
        self.model_tester.label_smoothing = 0.0
        super().test_encoder_decoder_loss_no_double_shift()

    def test_save_load_strict(self):
        config, _ = self.model_tester.prepare_config_and_inputs()
        for model_class in self.all_model_classes:
            model = model_class(config)
            with tempfile.TemporaryDirectory() as folder:
                model.save_pretrained(folder)
                _, info = model_class.from_pretrained(folder, output_loading_info=True)
            self.assertEqual(info["missing_keys"], set())

    def test_decoder_model_past_with_large_inputs(self):
        self.model_tester.create_and_check_decoder_model_past_large_inputs(
            *self.model_tester.prepare_config_and_inputs()
        )

    def test_encoder_decoder_model_standalone(self):
        self.model_tester.check_encoder_decoder_model_standalone(*self.model_tester.prepare_config_and_inputs())

    def test_share_encoder_decoder_embeddings(self):
        config, _ = self.model_tester.prepare_config_and_inputs()
        for model_class in self.all_model_classes:
            model = model_class(config)
            self.assertIs(model.get_encoder().embed_tokens, model.get_decoder().embed_tokens)
            self.assertIs(model.get_encoder().embed_tokens, model.get_input_embeddings())
        config.tie_word_embeddings = False
        for model_class in self.all_model_classes:
            model = model_class(config)
            self.assertIsNot(model.get_encoder().embed_tokens.weight, model.get_decoder().embed_tokens.weight)

    def test_checkpoint_without_the_embeddings_reports_and_initialises_them(self):
        """The shared matrix missing from a checkpoint is reported and drawn anew, as Marian's is (it was neither: left
        on the meta device, the next forward failed), and the encoder and decoder share its module again."""
        config, inputs = self.model_tester.prepare_config_and_inputs()
        for model_class in self.all_model_classes:
            model = model_class(config)
            prefix = "model." if model_class is VanillaTransformerForConditionalGeneration else ""
            with tempfile.TemporaryDirectory() as folder:
                model.save_pretrained(folder)
                state = safe_load_file(f"{folder}/model.safetensors")
                del state[f"{prefix}shared.weight"]
                safe_save_file(state, f"{folder}/model.safetensors", metadata={"format": "pt"})
                loaded, info = model_class.from_pretrained(folder, output_loading_info=True)
            self.assertIn(f"{prefix}shared.weight", info["missing_keys"])
            embeddings = loaded.get_input_embeddings()
            self.assertEqual(embeddings.weight.device.type, "cpu")
            self.assertIs(loaded.get_encoder().embed_tokens, embeddings)
            self.assertIs(loaded.get_decoder().embed_tokens, embeddings)
            self.assertFalse(torch.equal(embeddings.weight, model.get_input_embeddings().weight))
            self.assertEqual(float(embeddings.weight[config.pad_token_id].abs().sum()), 0.0)
            with torch.no_grad():
                loaded.eval()(**inputs)


class VanillaPointerGeneratorTest(VanillaTransformerTest):
    """The pointer-generator (`config.pointer_generator=True`): the same tests, less three that its deliberate
    differences (docs/model.md) rule out, each replaced by a test of what it does instead."""

    pointer_generator = True

    @unittest.skip(reason="its logits are log P (normalized): the loss reads them as they are; see the test below")
    def test_encoder_decoder_loss_no_double_shift(self):
        pass

    def test_loss_is_the_aligned_negative_log_likelihood_of_its_log_probabilities(self):
        """Upstream's oracle compares gradients with respect to `logits` against those of a cross-entropy over them,
        which adds softmax(logits) = P to the gradient; the copy model's loss is -log P(labels) itself, as the
        aligned cross-entropy is in value (log P is normalized), never the shifted one."""
        self.model_tester.label_smoothing = 0.0
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        model = VanillaTransformerForConditionalGeneration(config).eval()
        labels = ids_tensor([self.model_tester.batch_size, self.model_tester.seq_length], config.vocab_size).clamp(4)
        decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
        output = model(
            inputs["input_ids"],
            attention_mask=inputs["attention_mask"],
            decoder_input_ids=decoder_input_ids,
            labels=labels,
        )
        logits = output.logits.flatten(0, 1)
        aligned = torch.nn.functional.cross_entropy(logits, labels.flatten())
        shifted = torch.nn.functional.cross_entropy(output.logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())
        torch.testing.assert_close(logits.logsumexp(-1), torch.zeros(len(logits)), atol=1e-5, rtol=0)
        torch.testing.assert_close(output.loss, aligned)
        self.assertGreater(float((output.loss - shifted).abs()), 1e-3)
        (gradient,) = torch.autograd.grad(output.loss, output.logits)
        expected = -torch.nn.functional.one_hot(labels, config.vocab_size) / labels.numel()
        torch.testing.assert_close(gradient, expected.float())

    @unittest.skip(reason="it copies source tokens, so it needs input_ids beside inputs_embeds; see the test below")
    def test_inputs_embeds(self):
        pass

    def test_inputs_embeds_without_input_ids_is_refused_in_one_line(self):
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        model = VanillaTransformerForConditionalGeneration(config).eval()
        embeds = model.get_input_embeddings()(inputs["input_ids"])
        with self.assertRaisesRegex(ValueError, "pass input_ids"):
            model(inputs_embeds=embeds, decoder_input_ids=inputs["decoder_input_ids"])

    @unittest.skip(reason="its outputs hold two fields more than upstream counts (p_gen, copy_attention); see below")
    def test_attention_outputs(self):
        pass

    def test_attention_outputs_and_the_two_copy_outputs(self):
        """Upstream's attention shapes, and exactly the two outputs the copy adds to each model's: the head's
        `p_gen` and `copy_attention` (docs/model.md), the bare model's `copy_attention` and `decoder_embeddings`
        (what the head's copy reads)."""
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        tester = self.model_tester
        batch, length, heads, layers = tester.batch_size, tester.seq_length, tester.num_attention_heads, 2
        extra = {
            VanillaTransformerModel: {"copy_attention", "decoder_embeddings"},
            VanillaTransformerForConditionalGeneration: {"p_gen", "copy_attention"},
        }
        for model_class in self.all_model_classes:
            model = model_class._from_config(config, attn_implementation="eager").eval()
            with torch.no_grad():
                outputs = model(**inputs, output_attentions=True)
            upstream = {CACHE_NAME, "decoder_attentions", "cross_attentions", "encoder_last_hidden_state"}
            upstream |= {
                "encoder_attentions",
                "logits" if model_class is not VanillaTransformerModel else "last_hidden_state",
            }
            self.assertEqual(set(outputs.keys()), upstream | extra[model_class])
            for name in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
                self.assertEqual(len(outputs[name]), layers)
                self.assertEqual(tuple(outputs[name][0].shape), (batch, heads, length, length))
            self.assertEqual(tuple(outputs.copy_attention.shape), (batch, length, length))
            torch.testing.assert_close(outputs.copy_attention.sum(-1), torch.ones(batch, length))


# --- What hf_vanilla deliberately does otherwise (docs/model.md, "Where hf_vanilla differs from transformers'
# defaults"), each tested.


def tiny_config(**overrides) -> VanillaTransformerConfig:
    return VanillaTransformerModelTester(unittest.TestCase(), **overrides).get_config()


def test_default_decoding_is_the_papers_beam_search_not_greedy():
    """A new model's `generate()` decodes as the paper does (4 beams, the GNMT length penalty, the source length + 50),
    where transformers' default is greedy: a caller who wants greedy passes num_beams=1."""
    model = VanillaTransformerForConditionalGeneration(tiny_config()).eval()
    decoding = model.generation_config
    assert (decoding.num_beams, decoding.length_penalty_style, decoding.max_length_offset) == (4, "gnmt", 50)
    ids = ids_tensor([3, 6], 99).clamp(4)
    assert torch.equal(model.generate(ids, max_new_tokens=4), model.generate(ids, max_new_tokens=4, num_beams=4))


def test_loss_is_label_smoothed_by_default_and_transformers_cross_entropy_without_smoothing():
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = VanillaTransformerForConditionalGeneration(config).eval()
    ids, labels = ids_tensor([3, 6], 99).clamp(4), ids_tensor([3, 5], 99).clamp(4)
    output = model(ids, labels=labels)
    flat_logits, flat_labels = output.logits.flatten(0, 1), labels.flatten()
    smoothed = torch.nn.functional.cross_entropy(flat_logits, flat_labels, label_smoothing=0.1)
    torch.testing.assert_close(output.loss, smoothed)
    assert float((output.loss - torch.nn.functional.cross_entropy(flat_logits, flat_labels)).abs()) > 1e-4
    model.config.label_smoothing = 0.0
    torch.testing.assert_close(
        model(ids, labels=labels).loss, torch.nn.functional.cross_entropy(flat_logits, flat_labels)
    )


def test_the_trainers_label_smoothing_replaces_the_models_instead_of_stacking(tmp_path):
    """With `label_smoothing_factor`, transformers' Trainer takes the labels out of the batch and smooths the logits
    itself: the model computes no loss of its own, so the smoothing is applied once, the Trainer's."""
    from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

    model = VanillaTransformerForConditionalGeneration(
        tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    )
    args = Seq2SeqTrainingArguments(tmp_path, label_smoothing_factor=0.2, report_to=[], use_cpu=True)
    trainer = Seq2SeqTrainer(model=model, args=args)
    ids, labels = ids_tensor([3, 6], 99).clamp(4), ids_tensor([3, 5], 99).clamp(4)
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    seen = []
    model.register_forward_pre_hook(lambda module, args, kwargs: seen.append("labels" in kwargs), with_kwargs=True)
    model.train()
    loss = trainer.compute_loss(model, {"input_ids": ids, "decoder_input_ids": decoder_input_ids, "labels": labels})
    assert seen == [False]
    model.eval()
    logits = model(ids, decoder_input_ids=decoder_input_ids).logits.flatten(0, 1)
    once = torch.nn.functional.cross_entropy(logits, labels.flatten(), label_smoothing=0.2)
    torch.testing.assert_close(loss, once)


def test_forward_takes_the_cache_under_either_name_and_the_mask_call_keeps_its_place():
    """transformers 5.24 renamed `past_key_values` to `cache` (in `generate()`'s calls to `forward` and in the outputs;
    the old name is deprecated until 5.40): `forward` takes either (from 5.24 on warning for the old one, as
    transformers' models do, which its own `test_bc_cache_name_forward` checks), and the outputs hold the installed
    release's name. The decoder passes the cache to `create_causal_mask` by position, the fourth in both releases."""
    import inspect

    from transformers.masking_utils import create_causal_mask

    assert list(inspect.signature(create_causal_mask).parameters)[3] in ("cache", "past_key_values")
    model = VanillaTransformerForConditionalGeneration(tiny_config()).eval()
    ids, start = ids_tensor([2, 6], 99).clamp(4), torch.full((2, 1), 3)
    for name in ("cache", "past_key_values"):
        with torch.no_grad():
            first = model(ids, decoder_input_ids=start, use_cache=True)
            step = first.logits[:, -1].argmax(-1, keepdim=True)
            cached = model(ids, decoder_input_ids=step, **{name: getattr(first, CACHE_NAME)}).logits
            whole = model(ids, decoder_input_ids=torch.cat([start, step], 1), use_cache=False).logits[:, -1:]
        torch.testing.assert_close(cached, whole, atol=1e-5, rtol=1e-5)
