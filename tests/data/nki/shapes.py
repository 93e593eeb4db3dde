"""Shape parameters: `K, N = b.shape` unpacking, `a.shape[0] // 128`, an
`assert K == K_` that makes two dimensions one, a ceiling division, and constants
(module-level and keyword defaults) that stay constants."""
import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE = 128


@nki.jit
def shapes(a, b, chunks=2):
    K, N = b.shape
    K_ = a.shape[0]
    assert K == K_
    out = nl.ndarray((K, N), dtype=a.dtype, buffer=nl.shared_hbm)
    for k in nl.affine_range(a.shape[0] // TILE):
        for c in nl.affine_range(chunks):
            t = nl.load(b[k * TILE:(k + 1) * TILE, c * 64:(c + 1) * 64])
            nl.store(out[k * TILE:(k + 1) * TILE, c * 64:(c + 1) * 64], value=t)
    for r in nl.affine_range(math.ceil(N / 512)):
        u = nl.load(a[0:TILE, r * 512:(r + 1) * 512])
        nl.store(out[0:TILE, r * 512:(r + 1) * 512], value=u)
    return out
