import math

import pytest
import torch
import torch.nn.functional as F
from reference_impls import smoothed_targets

from aiayn.runtime.loss import label_smoothed_loss, projected_label_smoothed_loss


def test_smoothed_targets_sum_to_one_and_pad_gets_none():
    target = torch.tensor([5, 3, 0, 7])
    q = smoothed_targets(target, 10, 0.1)
    torch.testing.assert_close(q.sum(1), torch.tensor([1.0, 1.0, 0.0, 1.0]))
    assert torch.all(q[:, 0] == 0)
    assert q[0, 5] == pytest.approx(0.9) and q[0, 1] == pytest.approx(0.1 / 8)


def test_loss_equals_cross_entropy_against_smoothed_targets():
    torch.manual_seed(0)
    logits, target = torch.randn(2, 3, 10), torch.tensor([[4, 5, 0], [9, 1, 0]])
    loss, nll, n = label_smoothed_loss(logits, target, 0.1)
    q = smoothed_targets(target.view(-1), 10, 0.1)
    want = -(q * F.log_softmax(logits.view(-1, 10), dim=-1)).sum()
    torch.testing.assert_close(loss, want)
    torch.testing.assert_close(
        nll, F.cross_entropy(logits.view(-1, 10), target.view(-1), ignore_index=0, reduction="sum")
    )
    assert n.item() == 4


def test_no_smoothing_is_nll_and_uniform_logits_golden():
    logits, target = torch.zeros(1, 2, 8), torch.tensor([[3, 0]])
    loss, nll, n = label_smoothed_loss(logits, target, 0.0)
    assert loss.item() == pytest.approx(math.log(8)) and nll.item() == pytest.approx(math.log(8)) and n.item() == 1
    loss, _, _ = label_smoothed_loss(logits, target, 0.1)
    assert loss.item() == pytest.approx(math.log(8))


def reference_loss(logits, target, smoothing, pad_id=0):
    """The definition: -sum_tokens sum_c q(c) log p(c), with autograd through log_softmax."""
    vocab = logits.shape[-1]
    q = smoothed_targets(target.reshape(-1), vocab, smoothing, pad_id)
    lprobs = F.log_softmax(logits.float().reshape(-1, vocab), dim=-1)
    gold = lprobs.gather(1, target.reshape(-1, 1)).squeeze(1)
    return -(q * lprobs).sum(), -(gold * target.reshape(-1).ne(pad_id)).sum()


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("chunk_rows", [1, 3, 7, 1000])
def test_chunked_loss_value_and_gradient_equal_the_definition(smoothing, chunk_rows):
    torch.manual_seed(1)
    logits = (3 * torch.randn(4, 5, 11)).requires_grad_()
    target = torch.randint(1, 11, (4, 5))
    target[0, 3:] = 0
    target[2, 1:] = 0
    loss, nll, n = label_smoothed_loss(logits, target, smoothing, chunk_rows=chunk_rows)
    loss.backward()
    ref = logits.detach().clone().requires_grad_()
    want_loss, want_nll = reference_loss(ref, target, smoothing)
    want_loss.backward()
    torch.testing.assert_close(loss, want_loss, rtol=1e-5, atol=0)
    torch.testing.assert_close(nll, want_nll, rtol=1e-5, atol=0)
    torch.testing.assert_close(logits.grad, ref.grad, rtol=1e-5, atol=1e-7)
    assert n.item() == int(target.ne(0).sum())
    assert torch.all(logits.grad.view(-1, 11)[target.view(-1) == 0] == 0)  # padding takes no part


def test_gradient_scales_with_the_upstream_gradient_and_keeps_the_logits_dtype():
    torch.manual_seed(2)
    logits = torch.randn(2, 3, 9, dtype=torch.bfloat16).requires_grad_()
    target = torch.tensor([[4, 5, 0], [8, 1, 2]])
    loss, _, _ = label_smoothed_loss(logits, target, 0.1, chunk_rows=2)
    (2.5 * loss).backward()
    ref = logits.detach().clone().requires_grad_()
    want, _ = reference_loss(ref, target, 0.1)
    (2.5 * want).backward()
    assert loss.dtype == torch.float32 and logits.grad.dtype == torch.bfloat16
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=0)
    torch.testing.assert_close(logits.grad.float(), ref.grad.float(), rtol=1e-2, atol=1e-3)


def test_no_gradient_work_without_autograd():
    logits, target = torch.randn(2, 3, 7), torch.tensor([[4, 5, 0], [6, 1, 2]])
    with torch.no_grad():
        loss, nll, _ = label_smoothed_loss(logits.requires_grad_(), target, 0.1)
    assert not loss.requires_grad and not nll.requires_grad
    want, want_nll = reference_loss(logits.detach(), target, 0.1)
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=0)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("block_rows", [1, 4, 7, 1000])
def test_blocked_projection_equals_the_loss_of_the_whole_logits(smoothing, block_rows):
    """The loss, the NLL and both gradients equal the definition's on the logits h W^T formed whole, at
    block sizes that divide the rows, leave a remainder and exceed them; padding rows take no part."""
    torch.manual_seed(3)
    hidden = torch.randn(13, 6, dtype=torch.float64).float().requires_grad_()
    weight = torch.randn(11, 6).requires_grad_()
    target = torch.randint(1, 11, (13,))
    target[[2, 9]] = 0
    loss, nll, n = projected_label_smoothed_loss(hidden, weight, target, smoothing, block_rows=block_rows)
    (3.0 * loss).backward()
    h_ref, w_ref = hidden.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    want_loss, want_nll = reference_loss(h_ref @ w_ref.t(), target, smoothing)
    (3.0 * want_loss).backward()
    torch.testing.assert_close(loss, want_loss, rtol=1e-5, atol=0)
    torch.testing.assert_close(nll, want_nll, rtol=1e-5, atol=0)
    torch.testing.assert_close(hidden.grad, h_ref.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weight.grad, w_ref.grad, rtol=1e-5, atol=1e-6)
    assert n.item() == 11
    assert torch.all(hidden.grad[[2, 9]] == 0)


def test_blocked_projection_without_autograd_and_its_dtype_check():
    hidden, weight, target = torch.randn(5, 4), torch.randn(9, 4), torch.tensor([3, 0, 8, 1, 2])
    with torch.no_grad():
        loss, nll, _ = projected_label_smoothed_loss(hidden.requires_grad_(), weight, target, 0.1, block_rows=2)
    want, want_nll = reference_loss(hidden.detach() @ weight.t(), target, 0.1)
    assert not loss.requires_grad
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=0)
    torch.testing.assert_close(nll, want_nll, rtol=1e-5, atol=0)
    with pytest.raises(TypeError, match="float32 states and matrix, got torch.bfloat16"):
        projected_label_smoothed_loss(hidden.bfloat16(), weight, target, 0.1)
