"""A tiled matrix multiplication written for syncproof's tests in the public NKI
style: result[M, N] = lhsT[K, M].T @ rhs[K, N], the contraction accumulated in a PSUM
tile over a K loop, evacuated to SBUF and stored."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled_matmul(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                a[...] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b[...] = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(a[...], b[...], transpose_x=True)
            out = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=out)
    return result
