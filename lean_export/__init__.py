"""Lean 4 export of syntax, semantics, programs and theorems (issue 7; not yet built)."""
