# SPDX-License-Identifier: GPL-3.0-or-later
"""compare_peers.py --only patch: activation patching against PyTorch (docs/performance.md).

QKV Lab's qkv_bench times BM_PatchHeads/f32/gpt2_small/n:16 (the exact head_out grid of all 144 heads of a
GPT-2-small-shaped checkpoint, bench_patching.cpp) and BM_AttributionPatch/f32/gpt2_small/n:64 (a PatchingRun and
the attribution grid of every site) with BM_Predict/f32/gpt2_small/n:64 in the same run; the torch-f32 peer times
a TransformerLens patching loop over the same 144 heads (gpt2_torch.py, HeadPatching): a pass to the logits with
a forward hook writing the clean head's z into the corrupted run, per head. This module is the parent's side:
which benchmarks to run and the report; it needs no torch.
"""

PATCH_N, SMOKE_PATCH_N = 16, 8
PATCH_KEY = "head_out patching"  # the torch peer's time of its 144 hooked passes
PATCH_HEADS_NAME = "BM_PatchHeads/f32/gpt2_small/n:%d" % PATCH_N
ATTRIBUTION_NAME = "BM_AttributionPatch/f32/gpt2_small/n:64"
PREDICT_64_NAME = "BM_Predict/f32/gpt2_small/n:64"
BENCHMARKS = [PATCH_HEADS_NAME, ATTRIBUTION_NAME, PREDICT_64_NAME]
COUNTERS = ("vs_144_predicts", "vs_predict")  # the benchmarks' own ratios, read from qkv_bench's JSON


def patch_size(arguments):
    """The n of the head patching when --only names patch (--smoke: always, on tiny shapes), else None."""
    if arguments.smoke:
        return SMOKE_PATCH_N
    return PATCH_N if "patch" in {group.strip() for group in arguments.only.split(",")} else None


def print_report(qkv, torch_report, statistic):
    """QKV Lab's exact head_out grid against PyTorch's 144 hooked passes, and its attribution grids against its
    own pass to the logits at n = 64 (both from the same qkv_bench run), as a markdown table; `statistic`
    (samples, "median" or "best") is compare_peers.py's."""
    torch_times = torch_report["times"].get(PATCH_KEY) if torch_report else None
    torch_threads = (torch_report.get("thread_choice") or {}).get(PATCH_KEY) if torch_report else None
    rows = [("exact head_out grid, 144 heads, n = %d (`%s`) ÷ PyTorch's 144 passes to the logits, each with a "
             "forward hook patching one head's z%s" % (PATCH_N, PATCH_HEADS_NAME, "" if torch_threads is None
                                                         else " (torch.set_num_threads(%d))" % torch_threads),
             qkv.get(PATCH_HEADS_NAME), torch_times, "≤ 0.5"),
            ("a PatchingRun and the attribution grid of each of the nine sites, n = 64 (`%s`) ÷ QKV Lab's pass "
             "to the logits (`%s`)" % (ATTRIBUTION_NAME, PREDICT_64_NAME),
             qkv.get(ATTRIBUTION_NAME), qkv.get(PREDICT_64_NAME), "≤ 3")]

    def milliseconds(seconds):
        return "–" if seconds is None else "%.1f ms" % (seconds * 1e3)

    print("\nPatching, float32 (median and fastest of all repetitions):\n")
    print("| case | time | compared with | ratio | fastest | compared with, fastest | ratio, fastest | target |")
    print("|---|---|---|---|---|---|---|---|")
    for label, ours, theirs, target in rows:
        cells = [label]
        for how in ("median", "best"):
            mine, other = statistic(ours, how), statistic(theirs, how)
            ratio = "–" if mine is None or other is None else "%.2f" % (mine / other)
            cells += [milliseconds(mine), milliseconds(other), ratio]
        print("| " + " | ".join(cells + [target]) + " |")
    for name, counter, what in ((PATCH_HEADS_NAME, "vs_144_predicts", "144 of QKV Lab's own passes to the logits"),
                                (ATTRIBUTION_NAME, "vs_predict", "one pass to the logits")):
        samples = qkv.get(name + ":" + counter)
        if samples:
            print("\n%s over %s timed in the same benchmark: median %.2f, fastest %.2f"
                  % (name, what, statistic(samples, "median"), statistic(samples, "best")))
