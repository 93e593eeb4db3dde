"""The newer API: instructions that write `dst=` (or, called as a statement, their first
tensor argument) instead of returning a tile; nisa.dma_copy in both directions;
nisa.nc_matmul accumulating into a PSUM destination."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def dst_style(a, b):
    K = a.shape[0] // 128
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for k in range(K):
        at = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
        bt = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(bt, b[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=at, moving=bt)
    res = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(res, acc)
    nisa.dma_copy(dst=out, src=res)
    return out
