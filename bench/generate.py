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


def wide_body_kernel(ops: int, engines: int = 5, buffers: int = 64, seed: int = 0) -> str:
    """One `for i in 0..N` loop whose body holds `ops` ops over `engines` engines, each
    reading 2 and writing 1 of `buffers` buffers indexed `[i % 2]` (a deterministic
    pseudo-random choice): many producers per consumer, the shape of a fused layer."""
    import random

    rng = random.Random(seed)
    names = [f"E{e}" for e in range(engines)]
    lines = ["kernel wide_body", "engines " + " ".join(names), "param N = 4", "for i in 0..N {"]
    for k in range(ops):
        a, b = rng.sample(range(buffers), 2)
        w = rng.randrange(buffers)
        lines.append(f"  {names[k % engines]} op{k} reads b{a}[i % 2], b{b}[i % 2] writes b{w}[i % 2] lat {rng.randrange(1, 500)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def many_params_kernel(ops: int = 400, params: int = 200, engines: int = 4) -> str:
    """Straight-line ops over many parameters with no dependence: op k on engine
    k % engines reads `x[P{k % params}]` (a parameter-indexed element of a buffer no op
    writes) and writes its own element `y[k]`. Every pair of ops shares a buffer, none
    conflicts: the planner should spend no work per pair."""
    names = [f"E{e}" for e in range(engines)]
    lines = ["kernel many_params", "engines " + " ".join(names),
             "param " + ", ".join(f"P{p}" for p in range(params))]
    for k in range(ops):
        lines.append(f"{names[k % engines]} op{k} reads x[P{k % params}] writes y[{k}] lat {1 + k % 7}")
    return "\n".join(lines) + "\n"
