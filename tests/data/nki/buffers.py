"""Buffers: nl.ndarray in SBUF, PSUM and HBM, nl.zeros / nl.full / nl.empty_like /
nl.zeros_like, a tile allocated outside a loop (one buffer for every iteration) and one
allocated inside (one per iteration)."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def buffers(a):
    n = a.shape[0] // 128
    out = nl.ndarray((n * 128, 512), dtype=a.dtype, buffer=nl.hbm)
    shared = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    total = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(n):
        shared[...] = nl.load(a[i * 128:(i + 1) * 128, :])
        own = nl.full((128, 512), 1.0, dtype=nl.float32, buffer=nl.sbuf)
        own[...] = nl.add(own, shared)
        twin = nl.empty_like(own)
        twin[...] = nl.copy(own)
        zero = nl.zeros_like(twin)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(twin, zero))
    return out
