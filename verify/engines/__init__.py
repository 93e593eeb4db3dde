"""Checkers of a counter program against the reference semantics: `explicit`
(breadth-first product exploration) and the Z3 engine (`z3_machines`, `z3_events`,
`z3_check`). Trusted: imports only semantics and verify.verdicts."""
