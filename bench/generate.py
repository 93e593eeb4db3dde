"""Generated kernels for the sync benchmark: a long chain of software-pipelined
loop nests (the shape of a compiled multi-layer model), `blocks` of them, each with
4-6 ops on 4 engines; block k consumes block k-1's output buffer. Ops grow linearly
with `blocks` and each op has a bounded number of producers, so a sync algorithm
that scales linearly in the program should show it here."""

from __future__ import annotations


def chain_kernel(blocks: int) -> str:
    lines = ["kernel bench_chain", "engines LD PE ACT ST", "param N = 8, M = 4"]
    for k in range(blocks):
        i, j = f"i{k}", f"j{k}"
        src = f"o{k - 1}[0]" if k else "inp"
        shape = k % 3
        if shape == 0:  # double-buffered pipeline
            lines += [
                f"for {i} in 0..N {{",
                f"  LD ld{k} reads {src} writes a{k}[{i} % 2] lat 400",
                f"  PE mm{k} reads a{k}[{i} % 2] writes acc{k} lat 256",
                f"  ACT act{k} reads acc{k} writes o{k}[{i} % 2] lat 128",
                f"  ST st{k} reads o{k}[{i} % 2] writes out{k}[{i}] lat 400",
                "}",
            ]
        elif shape == 1:  # nested, dynamic inner loop
            lines += [
                f"for {i} in 0..N {{",
                f"  for {j} in 0..M {{",
                f"    LD ld{k} reads {src} writes a{k}[{j} % 2] lat 200",
                f"    PE mm{k} reads a{k}[{j} % 2], acc{k}[{i} % 2] writes acc{k}[{i} % 2] lat 128",
                "  }",
                f"  ACT act{k} reads acc{k}[{i} % 2] writes o{k}[{i} % 2] lat 96",
                f"  ST st{k} reads o{k}[{i} % 2] lat 200",
                "}",
            ]
        else:  # triangular
            lines += [
                f"ACT init{k} reads {src} writes o{k}[0] lat 64",
                f"for {i} in 0..N {{",
                f"  for {j} in 0..{i} + 1 {{",
                f"    PE qk{k} reads o{k}[0] writes s{k} lat 128",
                f"    ACT sm{k} reads s{k} writes p{k} lat 96",
                "  }",
                f"  ST st{k} reads p{k} writes out{k}[{i}] lat 200",
                "}",
            ]
    return "\n".join(lines) + "\n"
