"""Engines: the Tensor Engine (nc_matmul, nc_transpose), the Scalar Engine
(activation), the Vector Engine (tensor_tensor, tensor_scalar, tensor_reduce), GpSimd
(iota, and any instruction given engine=nisa.gpsimd_engine), an nl.* call whose engine
the compiler picks (nl.exp: the default, overridable with --nki-engine)."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def engines(a):
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a[0:128, 0:128])
    idx = nisa.iota(nl.arange(128)[None, :], dtype=nl.int32)
    t = nisa.nc_transpose(x)
    s = nisa.activation(op=nl.tanh, data=t)
    u = nisa.tensor_tensor(s, idx, op=np.add)
    v = nisa.tensor_tensor(u, x, op=np.multiply, engine=nisa.gpsimd_engine)
    w = nisa.tensor_scalar(v, np.multiply, 2.0)
    r = nisa.tensor_reduce(np.add, data=w, axis=(1,))
    e = nl.exp(r)
    m = nisa.nc_matmul(e, x)
    nl.store(out, value=m)
    return out
