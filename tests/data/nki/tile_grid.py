"""A list of lists of tiles: for each block row b, a list of the K tiles loaded for it
(the newer blocked matmul tutorials' style), read back as tiles[b][k]."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tile_grid(a):
    K = a.shape[0] // 128
    out = nl.ndarray((2 * 128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    tiles = []
    for b in range(2):
        row = []
        for k in range(K):
            t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a[k * 128:(k + 1) * 128, b * 128:(b + 1) * 128])
            row.append(t)
        tiles.append(row)
    for b in range(2):
        acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        for k in range(K):
            nisa.nc_matmul(dst=acc, stationary=tiles[b][k], moving=tiles[1 - b][k])
        res = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[b * 128:(b + 1) * 128, :], src=res)
    return out
