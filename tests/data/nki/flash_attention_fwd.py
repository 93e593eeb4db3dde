"""Causal flash attention forward for one head, written for syncproof's tests in the
public NKI style: query tiles outer, key/value tiles inner with the causal guard
(tiles above the diagonal skipped, the diagonal tile masked by affine_select), an
online softmax with running max m and sum l, and the P @ V accumulator rescaled per
key tile. q, k: [d, seqlen] (d <= 128); v: [seqlen, d]."""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def flash_fwd(q, k, v):
    d, seqlen = q.shape
    o = nl.ndarray((seqlen, d), dtype=q.dtype, buffer=nl.shared_hbm)
    n_tiles = seqlen // 128
    ip = nl.arange(128)[:, None]
    jf = nl.arange(128)[None, :]
    for i in nl.affine_range(n_tiles):
        q_tile = nl.load(q[:, nl.ds(i * 128, 128)])
        m = nl.full((128, 1), -30000.0, dtype=nl.float32, buffer=nl.sbuf)
        l = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        acc = nl.zeros((128, d), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.sequential_range(n_tiles):
            if j <= i:
                k_tile = nl.load(k[:, nl.ds(j * 128, 128)])
                v_tile = nl.load(v[nl.ds(j * 128, 128), :])
                s = nisa.nc_matmul(q_tile, k_tile)
                scores = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
                if j == i:
                    scores[...] = nisa.affine_select(pred=(ip >= jf), on_true_tile=s, on_false_value=-30000.0)
                else:
                    scores[...] = nisa.tensor_copy(s)
                m_tile = nisa.tensor_reduce(np.max, data=scores, axis=(1,))
                m_new = nl.maximum(m, m_tile)
                alpha = nisa.activation(op=nl.exp, data=m, bias=-m_new)
                rowsum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
                p = nisa.activation_reduce(op=nl.exp, data=scores, bias=-m_new,
                                           reduce_op=np.add, reduce_res=rowsum)
                l[...] = l * alpha + rowsum
                p_t = nisa.nc_transpose(p)
                p_sb = nl.copy(p_t)
                pv = nisa.nc_matmul(p_sb, v_tile)
                acc[...] = acc * alpha + pv
                m[...] = nl.copy(m_new)
        out = nl.divide(acc, l)
        nl.store(o[nl.ds(i * 128, 128), :], value=out)
    return o
