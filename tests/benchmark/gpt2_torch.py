# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPT-2-shaped model in plain PyTorch with random weights, for compare_peers.py's torch-f32 peer.

The blocks are written as transformers' GPT2LMHeadModel computes them (Conv1D weights d_in × d_out, gelu_new,
causal softmax attention, the tied unembedding); Debian has no python3-transformers. Each attention block has a
hook point on its z (n × heads × d_head, the input of c_proj), an identity module whose forward hooks may replace
the activation, as TransformerLens's `blocks.L.attn.hook_z` does. Two kinds of work are timed on it:

- predict(): the pass to the logits and what qkv_bench's BM_Predict also computes: at every position the
  log-softmax over the vocabulary, the top 10 and the loss on the next token;
- HeadPatching: a TransformerLens activation-patching loop over every head's z (exact head_out patching):
  the clean prompt's z cached once, then for each (layer, head) a forward hook that writes the clean head into
  the corrupted run's z, a pass to the logits, and logit[answer] − logit[wrong] at the last position.
"""

import math

import torch
import torch.nn.functional as F


class HookPoint(torch.nn.Module):
    """An identity; its forward hooks see the activation and may change it in place."""

    def forward(self, activation):
        return activation


class Block(torch.nn.Module):
    def __init__(self, tensor, d_model, heads, inner):
        super().__init__()
        self.d_model, self.heads = d_model, heads
        self.ln_1 = (tensor(d_model, centre=1.0), tensor(d_model))
        self.c_attn = (tensor(d_model, 3 * d_model), tensor(3 * d_model))
        self.c_proj = (tensor(d_model, d_model), tensor(d_model))
        self.ln_2 = (tensor(d_model, centre=1.0), tensor(d_model))
        self.c_fc = (tensor(d_model, inner), tensor(inner))
        self.mlp_proj = (tensor(inner, d_model), tensor(d_model))
        self.hook_z = HookPoint()

    def forward(self, x, causal):
        def w(pair):  # float32 weights; a float64 pass (the check) converts them
            return tuple(t.to(x.dtype) for t in pair)

        n, d_model, heads = x.shape[0], self.d_model, self.heads
        d_head = d_model // heads
        h = F.layer_norm(x, (d_model,), *w(self.ln_1), eps=1e-5)
        weight, bias = w(self.c_attn)
        q, k, v = torch.addmm(bias, h, weight).view(n, 3, heads, d_head).permute(1, 2, 0, 3)
        scores = torch.matmul(q, k.transpose(1, 2)).mul_(1.0 / math.sqrt(d_head))
        scores.masked_fill_(causal, -math.inf)
        z = self.hook_z(torch.matmul(torch.softmax(scores, -1), v).transpose(0, 1))  # n × heads × d_head
        weight, bias = w(self.c_proj)
        x = x + torch.addmm(bias, z.reshape(n, d_model), weight)
        h = F.layer_norm(x, (d_model,), *w(self.ln_2), eps=1e-5)
        weight, bias = w(self.c_fc)
        h = F.gelu(torch.addmm(bias, h, weight), approximate="tanh")
        weight, bias = w(self.mlp_proj)
        return x + torch.addmm(bias, h, weight)


class Gpt2(torch.nn.Module):
    """shapes: {"layers", "inner", "vocab", "positions"}; weights uniform in ±0.02 (norm weights about 1)."""

    def __init__(self, shapes, d_model, heads):
        super().__init__()
        generator = torch.Generator().manual_seed(2)

        def tensor(*shape, centre=0.0):
            return torch.rand(*shape, generator=generator, dtype=torch.float32).sub_(0.5).mul_(0.04).add_(centre)

        self.d_model, self.vocab = d_model, shapes["vocab"]
        self.wte, self.wpe = tensor(self.vocab, d_model), tensor(shapes["positions"], d_model)
        self.blocks = torch.nn.ModuleList(Block(tensor, d_model, heads, shapes["inner"])
                                          for _ in range(shapes["layers"]))
        self.ln_f = (tensor(d_model, centre=1.0), tensor(d_model))

    def forward(self, ids, dtype=torch.float32):
        """The logits (n × vocab)."""
        n = ids.numel()
        causal = torch.ones(n, n, dtype=torch.bool).triu_(1)
        x = self.wte.to(dtype)[ids] + self.wpe.to(dtype)[:n]
        for block in self.blocks:
            x = block(x, causal)
        h = F.layer_norm(x, (self.d_model,), *(t.to(dtype) for t in self.ln_f), eps=1e-5)
        return torch.matmul(h, self.wte.to(dtype).t())


def some_ids(n, vocab):
    """The token ids of qkv_bench's model benchmarks (Gpt2SmallCheckpoint.h)."""
    return torch.arange(n, dtype=torch.int64).mul_(7919).remainder_(vocab)


def predict(model, ids, dtype=torch.float32):
    """BM_Predict's work: the logits, then at every position the log-softmax, the top 10 and the loss."""
    logits = model(ids, dtype)
    log_probabilities = torch.log_softmax(logits, -1)
    top = torch.topk(log_probabilities, min(10, model.vocab), -1)
    loss = -log_probabilities[:-1].gather(1, ids[1:, None]).mean()
    return logits, top, loss


class HeadPatching:
    """Exact head_out patching as a TransformerLens loop runs it, on qkv_bench's prompts (bench_patching.cpp):
    the clean ids, the corrupted ids differing at n/4 and n/2, the metric logit[answer] − logit[wrong] at the
    last position. Each call of next_cell() patches the next (layer, head) in turn."""

    def __init__(self, model, n):
        self.model = model
        vocab = model.vocab
        self.clean = some_ids(n, vocab)
        self.corrupt = self.clean.clone()
        for position in (n // 4, n // 2):
            self.corrupt[position] = (self.clean[position] + 1234) % vocab
        self.answer, self.wrong = (1000, 2000) if vocab > 2000 else (1, 2)
        self.cells = [(layer, head) for layer in range(len(model.blocks)) for head in range(model.blocks[0].heads)]
        self.next = 0
        # The clean run's cache of every hook_z (run_with_cache), made once, as before a patching loop.
        self.clean_z = []
        handles = [block.hook_z.register_forward_hook(lambda module, inputs, z: self.clean_z.append(z.clone()))
                   for block in model.blocks]
        self.clean_metric = self.metric(model(self.clean))
        for handle in handles:
            handle.remove()
        self.corrupt_metric = self.metric(model(self.corrupt))

    def metric(self, logits):
        return float(logits[-1, self.answer] - logits[-1, self.wrong])

    def patched_metric(self, layer, head):
        clean_head = self.clean_z[layer][:, head]

        def patch_head(module, inputs, z):
            z[:, head] = clean_head

        handle = self.model.blocks[layer].hook_z.register_forward_hook(patch_head)
        try:
            return self.metric(self.model(self.corrupt))
        finally:
            handle.remove()

    def next_cell(self):
        layer, head = self.cells[self.next]
        self.next = (self.next + 1) % len(self.cells)
        return self.patched_metric(layer, head)

    def check(self):
        """Raises SystemExit unless the hook changes the pass: the first corrupted token is at n/4, so a head
        of the last layer patched with its clean z must move the metric."""
        layer, head = len(self.model.blocks) - 1, 0
        if self.clean_metric == self.corrupt_metric or self.patched_metric(layer, head) == self.corrupt_metric:
            raise SystemExit("head patching: the hooked pass does not change the metric (clean %g, corrupted %g)"
                             % (self.clean_metric, self.corrupt_metric))


def time_model(model_case, model_cases, patch_n, min_time, min_runs, times, best_calls, best_time, check_close):
    """The torch-f32 peer's model work, into times and best_calls (by case label, and patch_peers.PATCH_KEY):
    on a model of model_case's shapes, the pass to the logits of each of model_cases, checked once against the
    same code in float64; with patch_n, exact head_out patching of every head at n = patch_n, checked to change
    the metric, whose time is the mean hooked pass times the cells. best_time and check_close are
    compare_peers.py's."""
    import patch_peers

    model = Gpt2(model_case.model, model_case.d_model, model_case.heads)
    for case in model_cases:
        ids = some_ids(case.n, model.vocab)
        times[case.label], best_calls[case.label] = best_time(lambda: predict(model, ids), min_time, min_runs)
        if case is model_cases[0]:
            check_close(case, "f32", model(ids, torch.float32), model(ids, torch.float64), torch.abs)
    if patch_n:
        patching = HeadPatching(model, patch_n)
        patching.check()
        means, best = best_time(patching.next_cell, min_time, min_runs)
        times[patch_peers.PATCH_KEY] = [mean * len(patching.cells) for mean in means]
        best_calls[patch_peers.PATCH_KEY] = best * len(patching.cells)
