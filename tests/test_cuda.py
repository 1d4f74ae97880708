"""The model on a CUDA GPU: the same function and the same decoded tokens as on the CPU, and bf16 mixed precision
that stays close to fp32 and trains. CI has no GPU, so these skip there; on a GPU machine run
`python -m pytest -q tests/test_cuda.py`."""

import copy

import pytest
import torch

from reversal import assert_varied, decoded, reversal_rows
from runs import batch, tiny_model
from tolerances import assert_close_up_to_rounding

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_gpu_computes_the_cpu_function(attn_implementation):
    """float64 on both devices, a padded batch. The sinusoids are a float32 table whose entries may round the other
    way on the GPU (CUDA's sin differs from the CPU's by an ulp): one float32 rounding of the inputs, passed on
    through the float64 model. A masking or layout difference would show orders of magnitude above that."""
    model = tiny_model(attn_implementation=attn_implementation).double()
    ids, mask = batch()
    target, _ = batch(seed=2, lengths=(5, 3, 5))
    on_cpu = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target).logits
    on_gpu = model.cuda()(input_ids=ids.cuda(), attention_mask=mask.cuda(), decoder_input_ids=target.cuda()).logits
    assert_close_up_to_rounding(on_gpu.cpu(), on_cpu, depth=1, width=1, dtype=torch.float32)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_gpu_decodes_the_cpu_tokens(reversal_model, num_beams):
    """The paper's decoding (gnmt length penalty, source length + offset) of the reversal model gives the same tokens
    on both devices, and they are the reversals of the sources (ones the model is checked to reverse on the CPU
    without the cache, `reversal_rows`: which 5% a model trained to 95% gets wrong depends on the machine)."""
    model = copy.deepcopy(reversal_model).double()
    kwargs = dict(num_beams=num_beams, length_penalty=0.6, length_penalty_style="gnmt", max_length_offset=6)
    ids, mask, answers = reversal_rows(model, 9, [3, 10, 5, 8, 4, 6], kwargs)
    on_cpu = model.generate(ids, attention_mask=mask, **kwargs)
    on_gpu = model.cuda().generate(ids.cuda(), attention_mask=mask.cuda(), **kwargs)
    assert_varied(on_cpu)
    assert [decoded(row) for row in on_cpu.tolist()] == answers
    assert torch.equal(on_gpu.cpu(), on_cpu)


def test_bf16_autocast_stays_close_to_fp32():
    model = tiny_model().cuda()
    ids, mask = (t.cuda() for t in batch())
    target = batch(seed=2, lengths=(5, 3, 5))[0].cuda()
    with torch.no_grad():
        fp32 = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target).logits
        with torch.autocast("cuda", dtype=torch.bfloat16):
            bf16 = model(input_ids=ids, attention_mask=mask, decoder_input_ids=target).logits.float()
    relative = (bf16 - fp32).norm() / fp32.norm()
    assert 0 < relative < 2e-2


def test_bf16_training_fits_a_batch():
    """The paper's optimiser under bf16 autocast, label smoothing included, drives the loss of one batch down."""
    from hf_vanilla.training.schedule import paper_optimizer

    model = tiny_model(dropout=0.0).cuda().train()
    ids, mask = (t.cuda() for t in batch())
    labels = batch(seed=2, lengths=(5, 3, 5))[0].cuda()
    labels[labels == 0] = -100
    optimizer = paper_optimizer(model.parameters())
    for group in optimizer.param_groups:
        group["lr"] = 1e-3
    losses = []
    for _ in range(30):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < 0.5 * losses[0]
