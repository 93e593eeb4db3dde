"""A Python list filled with the tile each iteration allocates (the newer tutorials'
style: `tiles.append(t)` in one loop, `tiles[k]` in a later one)."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tile_lists(a, b):
    K, N = b.shape
    out = nl.ndarray((128, N), dtype=b.dtype, buffer=nl.shared_hbm)
    a_tiles = []
    for k in range(K // 128):
        t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[k * 128:(k + 1) * 128, 0:128])
        a_tiles.append(t)
    for n in range(N // 512):
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in range(K // 128):
            bt = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=bt, src=b[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
            nisa.nc_matmul(dst=acc, stationary=a_tiles[k], moving=bt)
        res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512:(n + 1) * 512], src=res)
    return out
