"""The margins of the float comparisons (docs/experiments.md): for some comparisons the decoding tests make, the
largest difference between the two computations, the largest magnitude compared, `tolerances.rounding_tolerance` of it
and their ratio; with --mutation NAME, the same under that mutation of tests/mutations.py: the size of the error the
tolerance must stay far below. Not a test; from the repository root:

    PYTHONPATH=$PWD python tests/rounding_margins.py [--mutation NAME] [--model reversal.pt]

--model keeps the trained reversal model's weights in a file (trained when absent), so that runs compare one model."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import torch

from reversal import REVERSAL_VOCAB, reversal_batch, train_reversal_model
from runs import batch, tiny_model
from tolerances import rounding_tolerance, transformer_sums


def reversal_model(path: str | None):
    """The reversal model, its weights read from `path` when it exists (written there after training otherwise)."""
    import hf_vanilla

    if path and Path(path).exists():
        config = hf_vanilla.VanillaTransformerConfig.from_size(
            "tiny", vocab_size=REVERSAL_VOCAB, dropout=0.0, label_smoothing=0.0
        )
        model = hf_vanilla.VanillaTransformerForConditionalGeneration(config)
        model.load_state_dict(torch.load(path))
        return model.eval()
    model = train_reversal_model()
    if path:
        torch.save(model.state_dict(), path)
    return model


def differences(model) -> dict[str, tuple[torch.Tensor, torch.Tensor, dict]]:
    """name: (one computation, the other, depth and width) for the comparisons measured."""
    from hf_vanilla.convert import to_marian

    pairs = {}
    for name, ours in (("reversal", model), ("random", tiny_model(vocab_size=1003, init_std=0.1))):
        theirs = to_marian(ours).eval()
        ids, mask, answers = reversal_batch(seed=1, rows=4, lengths=(3, 10))
        target = torch.tensor([[1] + answer[:-1] + [0] * (11 - len(answer)) for answer in answers])
        a = ours(input_ids=ids, attention_mask=mask, decoder_input_ids=target).logits
        b = theirs(input_ids=ids, attention_mask=mask, decoder_input_ids=target).logits
        pairs[f"Marian's logits, {name} model (test_marian_equivalence)"] = (a, b, transformer_sums(ours.config))
    sums = transformer_sums(model.config)
    ids, mask, _ = reversal_batch(seed=3, rows=6)
    kwargs = dict(attention_mask=mask, num_beams=4, num_return_sequences=4, max_new_tokens=12)
    kwargs.update(output_scores=True, return_dict_in_generate=True)
    cached, recomputed = (model.generate(ids, use_cache=use, **kwargs) for use in (True, False))
    if torch.equal(cached.sequences, recomputed.sequences):
        pairs["beam scores, cache against none (test_cache_changes_nothing)"] = (
            torch.stack(cached.scores),
            torch.stack(recomputed.scores),
            sums,
        )
    ids, mask, _ = reversal_batch(seed=4, rows=5)
    out = model.generate(
        ids, attention_mask=mask, num_beams=1, max_new_tokens=12, output_logits=True, return_dict_in_generate=True
    )
    forced = model(input_ids=ids, attention_mask=mask, decoder_input_ids=out.sequences[:, :-1]).logits
    pairs["cached steps against teacher forcing (test_cached_decoding_scores...)"] = (
        torch.stack(out.logits, 1),
        forced,
        sums,
    )
    untrained = tiny_model()
    source, _ = batch(lengths=(7,))
    target = torch.randint(4, 1000, (1, 6), generator=torch.Generator().manual_seed(5))
    changed = target.clone()
    changed[0, 4] = (changed[0, 4] + 1) % 996 + 4
    a, b = (untrained(input_ids=source, decoder_input_ids=t).logits for t in (target, changed))
    pairs["earlier positions, a later token changed (test_decoder_self_attention...)"] = (
        a[:, :4],
        b[:, :4],
        transformer_sums(untrained.config),
    )
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutation", help="a key of tests/test_mutations.py's MUTATIONS")
    parser.add_argument("--model", help="file for the reversal model's weights (read if present, else written)")
    args = parser.parse_args()
    if args.mutation:
        import mutations

        if args.mutation not in mutations.MUTATIONS:
            parser.error(f"--mutation must be one of: {'; '.join(mutations.MUTATIONS)}")
        model = ["--model", args.model] if args.model else []
        command = [sys.executable, __file__, *model]
        raise SystemExit(subprocess.run(command, env=mutations.environment(args.mutation)).returncode)
    print(
        f"kernels: {torch.backends.cpu.get_cpu_capability()}, threads {torch.get_num_threads()}, "
        f"oneDNN {'on' if torch.backends.mkldnn.enabled else 'off'}"
    )
    print("| comparison | max difference | max magnitude | tolerance | difference / tolerance |")
    print("|---|---|---|---|---|")
    with torch.no_grad():
        for name, (a, b, sums) in differences(reversal_model(args.model)).items():
            finite = torch.isfinite(b)
            difference = float((a - b)[finite].abs().max())
            scale = float(b[finite].abs().max())
            tolerance = rounding_tolerance(scale, **sums)
            print(f"| {name} | {difference:.3g} | {scale:.3g} | {tolerance:.3g} | {difference / tolerance:.3g} |")


if __name__ == "__main__":
    if os.environ.get("HF_VANILLA_TEST_NO_MKLDNN") == "1":
        torch.backends.mkldnn.enabled = False
    main()
