"""RMSNorm y = x * rsqrt(mean(x^2)) * g over 128-row tiles, written for syncproof's
tests in the public NKI style (nl.* calls, nl.arange index grids, masks, a
broadcast gamma loaded once)."""
import math

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm(x, g):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows = x.shape[0]
    ip = nl.arange(128)[:, None]
    i1 = nl.arange(1)[:, None]
    iy = nl.arange(x.shape[1])[None, :]
    g_tile = nl.load(g.reshape((1, g.shape[0]))[i1, iy])
    for i in nl.affine_range(math.ceil(rows / 128)):
        xt = nl.load(x[i * 128 + ip, iy], mask=(i * 128 + ip < rows))
        sq_sum = nl.sum(nl.square(xt), axis=[1])
        rstd = nl.rsqrt(sq_sum / x.shape[1])
        yt = nl.multiply(xt, rstd)
        yt[...] = nl.multiply(yt, g_tile.broadcast_to((128, x.shape[1])), mask=(i * 128 + ip < rows))
        nl.store(out[i * 128 + ip, iy], value=yt, mask=(i * 128 + ip < rows))
    return out
