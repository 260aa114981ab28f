#!/usr/bin/env python3
"""torch-shape-ops.py — the shape ops of scripts/bench-shape-ops.lua run through PyTorch on the
same GPU, at the same shapes and counting the same bytes (what each op must read + write), so
the two tables can be read side by side. Timed with CUDA events: 2 warm-ups, median of --reps.
    python3 lab/torch-shape-ops.py [--mib 960] [--reps 7] [--ceiling GBPS]
"""
import argparse
import statistics

import torch


def timed(fn, reps):
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times), min(times), max(times)


def cases(mib):
    n = (mib << 20) // 4
    C = 1024
    R = n // C
    x = torch.rand(R, C, device="cuda")
    up = torch.rand(R + 2, C + 32, device="cuda")
    y = torch.rand(256, n // 256, device="cuda")
    z = torch.rand(R // C, C, C, device="cuda")
    src = torch.rand(R // 2, C, device="cuda")
    dest = torch.rand(R, C, device="cuda")
    flat, flat_out = torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    view = x.view(-1).as_strided((C, R), (1, C))
    half = R // 2 * C * 4
    pos = 3 * R // 4

    def rotating():
        k = R - pos
        dest[pos:].copy_(src[:k])
        dest[: R // 2 - k].copy_(src[k:])

    return R, C, [
        ("pad", lambda: torch.nn.functional.pad(x, (16, 16, 1, 1)), n * 4 + (R + 2) * (C + 32) * 4),
        ("pad_backward", lambda: torch.ops.aten.reflection_pad2d_backward(up[None], x[None], [16, 16, 1, 1]),
         (R + 2) * (C + 32) * 4 + n * 4),
        ("flip", lambda: torch.flip(x, [1]), 2 * n * 4),
        ("roll", lambda: torch.roll(x, 7, 1), 2 * n * 4),
        ("cumsum", lambda: torch.cumsum(y, 0), 2 * n * 4),
        ("triu", lambda: torch.triu(z), 2 * n * 4),
        ("tril", lambda: torch.tril(z), 2 * n * 4),
        ("write_slice", lambda: dest[R // 4: R // 4 + R // 2].copy_(src), 2 * half),
        ("write_slice_rotating", rotating, 2 * half),
        ("copy", lambda: flat_out.copy_(flat), 2 * n * 4),
        ("contiguize", lambda: view.contiguous(), 2 * n * 4),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=960)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--ceiling", type=float, default=None, help="copy ceiling in GB/s, for the last column")
    o = ap.parse_args()
    R, C, ops = cases(o.mib)
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}, f32 {R}x{C} ({o.mib} MiB in), {o.reps} reps")
    print(f"{'kernel':<22}{'bytes moved':>14}{'median ms':>11}{'GB/s':>8}{'of copy':>9}")
    for name, fn, nbytes in ops:
        med, lo, hi = timed(fn, o.reps)
        share = f"{100 * nbytes / med / 1e9 / o.ceiling:.0f}%" if o.ceiling else "-"
        print(f"{name:<22}{nbytes:>14}{med * 1e3:>11.3f}{nbytes / med / 1e9:>8.0f}{share:>9}")


if __name__ == "__main__":
    main()
