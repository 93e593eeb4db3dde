"""Lean 4 export of syntax, semantics, programs and theorems (`syncproof lean`).

`lean/Syncproof/*.lean` is the fixed library (syntax, semantics, bisimulation, the
bounded checker); `printer.py` prints a kernel as a Lean term; `export.py` writes the
Lake project with the kernel's theorems.
"""
