import math

import pytest
import torch
import torch.nn.functional as F

from aiayn.train.loss import label_smoothed_loss, smoothed_targets


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
    torch.testing.assert_close(nll, F.cross_entropy(logits.view(-1, 10), target.view(-1), ignore_index=0, reduction="sum"))
    assert n.item() == 4


def test_no_smoothing_is_nll_and_uniform_logits_golden():
    logits, target = torch.zeros(1, 2, 8), torch.tensor([[3, 0]])
    loss, nll, n = label_smoothed_loss(logits, target, 0.0)
    assert loss.item() == pytest.approx(math.log(8)) and nll.item() == pytest.approx(math.log(8)) and n.item() == 1
    loss, _, _ = label_smoothed_loss(logits, target, 0.1)
    assert loss.item() == pytest.approx(math.log(8))
