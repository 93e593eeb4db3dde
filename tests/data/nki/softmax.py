"""Row softmax over 128-row tiles, written for syncproof's tests in the public NKI style
(nki.isa instructions: a Vector Engine max, a Scalar Engine exp with a fused sum, a
Vector Engine reciprocal and scale)."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def softmax(x):
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(rows // 128):
        tile = nl.load(x[r * 128:(r + 1) * 128, :])
        neg_max = nisa.tensor_reduce(np.max, data=tile, axis=(1,), negate=True)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        e = nisa.activation_reduce(op=nl.exp, data=tile, bias=neg_max,
                                   reduce_op=np.add, reduce_res=total)
        inv = nisa.reciprocal(total)
        out = nisa.tensor_scalar(e, np.multiply, inv)
        nl.store(y[r * 128:(r + 1) * 128, :], value=out)
    return y
