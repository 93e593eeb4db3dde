"""Every loop form the importer reads: nl.affine_range, nl.sequential_range,
nl.static_range and range, with a start, a stop and a constant step; a loop variable
name used twice."""
import nki
import nki.language as nl


@nki.jit
def loops(a):
    n = a.shape[0]
    out = nl.ndarray((n, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n):
        t = nl.load(a[i, :])
        nl.store(out[i, :], value=t)
    for i in nl.sequential_range(1, n):
        t = nl.load(out[i - 1, :])
        u = nl.exp(t)
        nl.store(out[i, :], value=u)
    for c in nl.static_range(4):
        w = nl.load(a[c, :])
        nl.store(out[c, :], value=w)
    for s in range(0, n, 2):
        x = nl.load(a[s, :])
        nl.store(out[s + 1, :], value=x)
    return out
