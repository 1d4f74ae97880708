"""An OPUS-MT checkout made here: SentencePiece tokenizer files trained on the shared WMT sample, and an untrained
MarianMTModel set up as OPUS-MT's are."""

import json
from pathlib import Path

import torch

from runs import WMT_SAMPLE, require


def write_opus_tokenizer(folder: Path, sentences: int = 2000, pieces: int = 300) -> int:
    """Writes the tokenizer files of an OPUS-MT checkout into `folder`: SentencePiece models trained on the shared
    WMT sample (source.spm on English, target.spm on German, `pieces` each) and one vocab.json over both, with
    </s> = 0, <unk> = 1 and <pad> last, as OPUS-MT's Marian vocabularies are; returns the vocabulary size."""
    import io

    import sentencepiece

    require(WMT_SAMPLE)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"</s>": 0, "<unk>": 1}
    for lang, name in (("en", "source.spm"), ("de", "target.spm")):
        lines = (WMT_SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()[:sentences]
        buffer = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=buffer,
            vocab_size=pieces,
            model_type="unigram",
            character_coverage=1.0,
            bos_id=-1,
            eos_id=-1,
            unk_id=0,
            minloglevel=2,
        )
        (folder / name).write_bytes(buffer.getvalue())
        processor = sentencepiece.SentencePieceProcessor(model_proto=buffer.getvalue())
        for index in range(processor.get_piece_size()):
            if not (processor.is_unknown(index) or processor.is_control(index)):
                vocab.setdefault(processor.id_to_piece(index), len(vocab))
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"source_lang": "en", "target_lang": "de"}))
    return len(vocab)


def random_marian(vocab_size: int, seed: int = 0, bias: bool = True, **overrides):
    """An untrained `MarianMTModel` set up as OPUS-MT's are (</s> = 0, <pad> last and the decoder's start token, pad
    never generated, swish, scaled embeddings), with projections of std 0.1 (so that its outputs depend on its input),
    a random `final_logits_bias` (unless `bias=False`) and a non-zero <pad> embedding (the start token's)."""
    from transformers import MarianConfig, MarianMTModel

    pad = vocab_size - 1
    settings = dict(
        vocab_size=vocab_size,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=0,
        max_position_embeddings=256,
        init_std=0.1,
        dropout=0.1,
    )
    torch.manual_seed(seed)
    marian = MarianMTModel(MarianConfig(**{**settings, **overrides})).eval()
    with torch.no_grad():
        if bias:
            marian.final_logits_bias.normal_(0.0, 0.5)
        marian.model.shared.weight[marian.config.pad_token_id].normal_(0.0, 0.3)
    marian.generation_config.update(
        bad_words_ids=[[marian.config.pad_token_id]], renormalize_logits=True, num_beams=4, max_length=64
    )
    return marian
