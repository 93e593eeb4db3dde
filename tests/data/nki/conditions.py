"""Conditionals: an `if` on a shape and a loop variable becomes a kernel `if`; an `if` on
a keyword argument's constant is decided while reading (only its branch is read); a
`mask=` condition is not control flow."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def conditions(a, scale_rows=False):
    n = a.shape[0] // 128
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        if scale_rows:
            t = nl.multiply(t, 2.0)
        if i + 1 < n:
            u = nl.exp(t)
            nl.store(out[i * 128:(i + 1) * 128, :], value=u)
        else:
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out
