"""The checkers, and the tools built on them (docs/design.md section 1 and 4).

Trusted: `verdicts` (the result vocabulary), `engines` (explicit-state and Z3 checkers
of the reference against the counter semantics) and `proof` (the all-values proof).
They import only `semantics`, never `algorithm`: what is checked must not be able to
shape the check (an import-linter contract, tests/test_layering.py).

Untrusted users of the checkers: `search` (Hypothesis program generators,
counterexample search, mutation testing) and `timing` (the timed scheduler) run sync
strategies on what they check or time; `cli` is the command line on top of all.
"""
