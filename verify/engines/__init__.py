"""Checkers of a counter program against the reference semantics: `explicit`
(breadth-first product exploration), `happens_before` (the default) and the Z3 engine
(`z3_potential`, `z3_machines`, `z3_events`, `z3_check`). Trusted: imports only
semantics and verify.verdicts."""
