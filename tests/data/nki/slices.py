"""Windows of tensors: Python slices, nl.ds(start, size), nl.arange index grids with an
offset, nl.mgrid with .p / .x, a point index, Ellipsis and open slices."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def slices(a):
    R, C = a.shape
    out = nl.ndarray((R, C), dtype=a.dtype, buffer=nl.shared_hbm)
    grid = nl.mgrid[0:128, 0:256]
    ip = nl.arange(128)[:, None]
    jf = nl.arange(256)[None, :]
    for i in nl.affine_range(R // 128):
        for j in nl.affine_range(C // 256):
            x = nl.ndarray((128, 2, 256), dtype=a.dtype, buffer=nl.sbuf)
            x[:, 0, :] = nl.load(a[i * 128:(i + 1) * 128, nl.ds(j * 256, 256)])
            x[..., 1, :] = nl.load(a[i * 128 + ip, j * 256 + jf])
            y = nl.add(x[grid.p, 0, grid.x], x[:, 1, :])
            nl.store(out[i * 128 + grid.p, j * 256 + grid.x], value=y)
    return out
