"""Label-smoothed cross entropy (paper section 5.4), computed over row blocks of the logits.

The paper gives only the value, eps_ls = 0.1. Here the smoothing mass is spread over every class
except the gold one and padding: q(gold) = 1 - eps, q(c) = eps / (V - 2) for the other non-pad
classes, q(pad) = 0. (fairseq spreads eps over the V - 1 non-gold classes, padding included:
``label_smoothed_nll_loss`` in facebookresearch/fairseq ``fairseq/criterions/label_smoothed_cross_entropy.py``
at v0.12.2; eps / (V - 2) - eps / (V - 1) is about 7e-11 per class at V = 37000. tensorflow/tensor2tensor
at 3d9c62f2 spreads it over the M - 1 non-gold rows of its output layer, ``smoothing_cross_entropy`` in
``models/common_layers.py``, and M is the modality's padded size, 40,960 for EN-DE's vocabulary of
about 37,000 (``wmt_ende_bpe32k`` in ``data_generators/problem_hparams.py``): its softmax also spans
some 4,000 rows no token uses, which take a share of the smoothing mass. docs/deviations.md's list of differences
from the paper's code names this one; no key restores it.)

The loss and its gradient are computed together, one block of rows at a time, in float32 whatever
the logits' dtype: no full-size float32 copy of the (N, V) logits, no full-size log-probabilities,
no full-size zero tensors in the backward. Peak memory beyond the logits is one gradient of the
logits' size and dtype plus one block of float32 scratch.

On a CPU in float32 the trainer hands over the decoder's final states and the projection matrix
instead of the logits (:func:`projected_label_smoothed_loss`): the logits h W^T are formed one block of
rows at a time, each block's loss and logit gradient computed at once, and the block's share of
d loss / d h and d loss / d W taken from it while it is still in the cache. The (N, V) logits and
their gradient never exist in full, and the step is faster (``benchmarks/RESULTS.md``, "CPU training
against fairseq-train again"). GPUs and bf16 keep the whole logits.

The loss lives in the runtime layer because training and scoring share it: the dev perplexity
(:mod:`aiayn.evaluate.perplexity`) is its summed NLL at smoothing 0, the same arithmetic as the
training loss's NLL.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

# Elements of float32 scratch per block: a few MB on a CPU (in its cache, and few enough blocks that
# the threads' start-up per operation does not add up), 1 GiB on a GPU: each block costs about 20
# kernel launches, and a pass of 25,000 target tokens over 37,000 classes takes 4 blocks (14 at
# 256 MB, 260 of an eager base step's 1,045 launches: benchmarks/step_overhead.py).
BLOCK_ELEMENTS = {"cpu": 2**21, "cuda": 2**28}


def _block(
    x: Tensor, target: Tensor, keep: Tensor, smoothing: float, pad_id: int, scratch: Tensor, grad: Tensor | None
) -> tuple[Tensor, Tensor]:
    """Loss and NLL sums of one block x (c, V) float32; writes d loss / d x into ``grad`` (c, V) if given.

    With m = max_c x_c, e = exp(x - m), s = sum_c e_c:  log p_c = x_c - m - log s, and
    d loss / d x_c = keep (p_c - q_c) (for a row that is not padding; zero for one that is).
    """
    vocab = x.shape[1]
    u, confidence = smoothing / (vocab - 2), 1.0 - smoothing
    m = x.amax(dim=1, keepdim=True)  # (c, 1)
    e = torch.sub(x, m, out=scratch).exp_()  # (c, V)
    s = e.sum(dim=1)  # (c,)
    lse = m.squeeze(1) + s.log()  # (c,)
    x_gold = x.gather(1, target.unsqueeze(1)).squeeze(1)  # (c,)
    x_pad = x[:, pad_id]
    lp_gold = x_gold - lse
    nll = -(lp_gold * keep).sum()
    loss = confidence * nll
    if smoothing > 0.0:
        others = x.sum(dim=1) - vocab * lse - lp_gold - (x_pad - lse)  # sum of log p over non-gold non-pad
        loss = loss - u * (others * keep).sum()
    if grad is not None:
        scale = (keep / s).unsqueeze(1)  # (c, 1)
        if smoothing > 0.0:
            torch.addcmul((-u * keep).unsqueeze(1), e, scale, out=grad)
        else:
            torch.mul(e, scale, out=grad)
        p_pad = torch.exp(x_pad - lse) * keep  # q(pad) = 0
        grad[:, pad_id] = p_pad.to(grad.dtype)
        g_gold = (torch.exp(lp_gold) - confidence) * keep
        grad.scatter_(1, target.unsqueeze(1), g_gold.to(grad.dtype).unsqueeze(1))
    return loss, nll


def _times_upstream(grad_loss: Tensor, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
    """Gradients of the loss computed in a forward pass, times the upstream gradient of the loss (in place;
    skipped when it is 1, which a CPU can check for free)."""
    if grad_loss.device.type != "cpu" or grad_loss.item() != 1.0:
        for grad in grads:
            if grad is not None:
                grad.mul_(grad_loss.to(grad.dtype))
    return grads


class _SmoothedCrossEntropy(torch.autograd.Function):
    """(loss sum, nll sum) of logits (N, V); the gradient of the loss is computed in the forward pass."""

    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, smoothing: float, pad_id: int, rows: int, needs_grad: bool):
        keep = target.ne(pad_id).float()  # (N,)
        grad = torch.empty_like(logits) if needs_grad else None
        scratch = torch.empty(min(rows, logits.shape[0]), logits.shape[1], dtype=torch.float32, device=logits.device)
        loss = torch.zeros((), dtype=torch.float32, device=logits.device)
        nll = torch.zeros((), dtype=torch.float32, device=logits.device)
        for start in range(0, logits.shape[0], rows):
            end = min(start + rows, logits.shape[0])
            block_grad = None if grad is None else grad[start:end]
            block_loss, block_nll = _block(
                logits[start:end].float(),
                target[start:end],
                keep[start:end],
                smoothing,
                pad_id,
                scratch[: end - start],
                block_grad,
            )
            loss += block_loss
            nll += block_nll
        ctx.grad = grad
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_loss: Tensor, grad_nll: Tensor):
        grad, ctx.grad = ctx.grad, None
        return *_times_upstream(grad_loss, grad), None, None, None, None, None


# Rows per block of the blocked projection: its weight gradient is a product whose inner dimension is
# the block's rows, which needs a few hundred to run near full speed. In ms for the projection, the loss
# and both gradients of 3,900 rows on two threads: V 10,000, d_model 256 -> 470 (256 rows), 449 (512),
# 466 (1024); V 37,000, d_model 512 -> 4,744 (56 rows), 3,341 (226), 3,009 (512), 2,977 (1024), 3,068 (2048).
PROJECTION_BLOCK_ROWS = 512


class _ProjectedSmoothedCrossEntropy(torch.autograd.Function):
    """(loss sum, nll sum) of the logits h W^T, formed a block of rows at a time; the gradients of the
    loss with respect to h and W are computed in the forward pass."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, target: Tensor, smoothing: float, pad_id: int, rows: int):
        keep = target.ne(pad_id).float()  # (N,)
        n, vocab = hidden.shape[0], weight.shape[0]
        rows = max(1, min(rows, n))
        logits = hidden.new_empty(rows, vocab)
        scratch = hidden.new_empty(rows, vocab)
        needs_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        grad_logits = hidden.new_empty(rows, vocab) if needs_grad else None
        grad_hidden = torch.empty_like(hidden) if ctx.needs_input_grad[0] else None
        grad_weight = torch.zeros_like(weight) if ctx.needs_input_grad[1] else None
        loss = hidden.new_zeros(())
        nll = hidden.new_zeros(())
        for start in range(0, n, rows):
            end = min(start + rows, n)
            h = hidden[start:end]  # (c, d)
            x = torch.mm(h, weight.t(), out=logits[: end - start])  # (c, V)
            g = None if grad_logits is None else grad_logits[: end - start]
            block_loss, block_nll = _block(
                x, target[start:end], keep[start:end], smoothing, pad_id, scratch[: end - start], g
            )
            loss += block_loss
            nll += block_nll
            if grad_hidden is not None:
                torch.mm(g, weight, out=grad_hidden[start:end])  # (c, d)
            if grad_weight is not None:
                grad_weight.addmm_(g.t(), h)  # (V, d)
        ctx.grads = (grad_hidden, grad_weight)
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_loss: Tensor, grad_nll: Tensor):
        grads, ctx.grads = ctx.grads, None
        return *_times_upstream(grad_loss, *grads), None, None, None, None


def projected_label_smoothed_loss(
    hidden: Tensor,
    weight: Tensor,
    target: Tensor,
    smoothing: float,
    pad_id: int = 0,
    block_rows: int = PROJECTION_BLOCK_ROWS,
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`label_smoothed_loss` of the logits ``hidden`` (R, d) ``weight`` (V, d)^T, without forming
    them whole: ``block_rows`` rows at a time (module docstring). float32 tensors; the gradients reach
    ``hidden`` and ``weight`` as if the logits had been formed and passed to :func:`label_smoothed_loss`
    (equal up to float32 rounding). Returns float32 scalars (loss, nll, n); the loss's backward may run
    once."""
    if hidden.dtype != torch.float32 or weight.dtype != torch.float32:
        raise TypeError(
            f"the blocked projection takes float32 states and matrix, got {hidden.dtype} and {weight.dtype}"
        )
    loss, nll = _ProjectedSmoothedCrossEntropy.apply(
        hidden.reshape(-1, hidden.shape[-1]), weight, target.reshape(-1), float(smoothing), int(pad_id), int(block_rows)
    )
    return loss, nll, target.ne(pad_id).sum()


def label_smoothed_loss(
    logits: Tensor, target: Tensor, smoothing: float, pad_id: int = 0, chunk_rows: int | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Summed label-smoothed cross entropy, summed NLL and the number of non-pad targets.

    logits (..., V) (any float dtype; the arithmetic is float32), target (...) ids: (B, T, V) and (B, T),
    or the gold positions only, (R, V) and (R,), as the trainer passes them.
    loss = -sum_tokens sum_c q(c) log p(c) with q as in the module docstring, evaluated as
    -(1 - eps) log p(gold) - eps / (V - 2) (sum_c log p(c) - log p(gold) - log p(pad)).
    nll = -sum_tokens log p(gold) (not differentiable). Padding targets are ignored. ``chunk_rows``
    rows are processed at a time (default: a block of :data:`BLOCK_ELEMENTS` for the device).
    Returns float32 scalars (loss, nll, n). The loss's backward may run once (no ``retain_graph``).
    """
    vocab = logits.shape[-1]
    flat, target = logits.reshape(-1, vocab), target.reshape(-1)
    if chunk_rows is None:
        chunk_rows = max(1, BLOCK_ELEMENTS.get(logits.device.type, BLOCK_ELEMENTS["cuda"]) // vocab)
    needs_grad = torch.is_grad_enabled() and logits.requires_grad
    loss, nll = _SmoothedCrossEntropy.apply(flat, target, float(smoothing), int(pad_id), int(chunk_rows), needs_grad)
    return loss, nll, target.ne(pad_id).sum()


def fused_label_smoothed_loss(
    logits: Tensor, target: Tensor, smoothing: float, pad_id: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`label_smoothed_loss` in plain operations that ``torch.compile`` fuses: the compiled step's loss.

    The same sums, written so that a compiler makes one pass over the logits forward and one backward,
    with no float32 copy of them: log p(gold) and log p(pad) are picked by comparing the class index
    with the target (a product with a mask, not a gather, whose backward would be a scatter into a
    zeroed (N, V) tensor), and the rows' log-sum-exp is what the backward keeps beside the logits.
    Inductor then makes one reduction kernel of the forward (read each logit once) and one pointwise
    kernel of the backward (read each logit, write its gradient): ``benchmarks/step_overhead.py``
    counts the bytes per logit. Eagerly this allocates (N, V) temporaries: there use
    :func:`label_smoothed_loss`. Returns float32 scalars (loss, nll, n); nll is not differentiable.
    """
    x = logits.reshape(-1, logits.shape[-1]).float()  # (N, V), fused into the kernels that read it
    target = target.reshape(-1, 1)  # (N, 1)
    vocab = x.shape[1]
    u, confidence = smoothing / (vocab - 2), 1.0 - smoothing
    keep = target.squeeze(1).ne(pad_id)
    classes = torch.arange(vocab, device=x.device)  # (V,)
    lse = torch.logsumexp(x, dim=1)  # (N,)
    x_gold = torch.where(classes == target, x, 0.0).sum(dim=1)  # (N,)
    x_pad = torch.where(classes == pad_id, x, 0.0).sum(dim=1)
    nll = torch.where(keep, lse - x_gold, 0.0).sum()
    # sum of log p over the classes but gold and pad: sum_c x_c - V lse - (x_gold - lse) - (x_pad - lse)
    others = x.sum(dim=1) - (vocab - 2) * lse - x_gold - x_pad
    loss = confidence * nll - u * torch.where(keep, others, 0.0).sum()
    return loss, nll.detach(), keep.sum()
