"""Hand-written kernels whose waits read `count(F)` (`{d}` is the variant: an offset added
to the exact threshold), shared by the engine and proof tests of count(F)."""

PIPE = """\
engines PE DVE
param N
for i in 0..N {
  PE mm writes a[i]
  DVE add reads a[i] wait PE >= count(PE){d}
}
"""

# A DMA queue and an if/else: the load overwrites the slot the DVE op two iterations
# back read (count(DVE) - 1 of them must be done); each DVE op reads this iteration's load.
DMA_IF = """\
engines PE DVE
queue Q
param N
for i in 0..N {
  PE load writes t[i % 2] via Q wait DVE >= count(DVE) - 1
  if i % 2 == 0 {
    DVE add reads t[i % 2] writes o[i] wait Q >= count(Q){d}
  } else {
    DVE mul reads t[i % 2] writes o[i] wait Q >= count(Q){d}
  }
}
"""

# Two PE ops per inner iteration: the consumer needs the first, count(PE) - 1 of them.
NESTED = """\
engines PE ACT
param N, M
for i in 0..N {
  for j in 0..M {
    PE a writes x[i, j]
    PE b writes y[i, j]
    ACT c reads x[i, j] wait PE >= count(PE) - 1{d}
  }
}
"""

# A producer under a guard: count(PE) counts only the iterations that ran it.
GUARDED = """\
engines PE DVE
param N
for i in 0..N {
  if i % 3 != 1 {
    PE p writes x[i]
  }
  DVE c reads x[i] wait PE >= count(PE){d}
}
"""

# A queue with increment 4: C[Q] is 4 per transfer, count(Q) 1 per transfer (so
# 4 * count(Q) - 1 is still exact: one count fewer is 4 less).
INCREMENT = """\
engines PE DVE
queue Q increment 4
param N
for i in 0..N {
  PE load writes t[i] via Q
  DVE use reads t[i] wait Q >= 4 * (count(Q){d})
}
"""

# A barrier resets the semaphores, not count(PE): after it, N PE instances are counted
# that C[PE] no longer holds.
BARRIER = """\
engines PE DVE
param N
for i in 0..N {
  PE mm writes a[i]
}
barrier
for k in 0..N {
  PE mm2 writes b[k]
  DVE add reads b[k] wait PE >= count(PE) - N{d}
}
"""
