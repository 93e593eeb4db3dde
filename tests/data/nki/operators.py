"""Python operators on tiles (`*`, `+`, `-`, unary minus) are the nl.* calls of the same
meaning; `+=` of a matmul accumulates in PSUM, `+=` of a tile adds into the target."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def operators(a, b):
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[k * 128:(k + 1) * 128, 0:128])
        y = nl.load(b[k * 128:(k + 1) * 128, 0:512])
        p = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        p += nl.matmul(x, y, transpose_x=True)
        acc += p
    z = -(acc * 2.0) + acc - acc
    nl.store(out, value=z)
    return out
