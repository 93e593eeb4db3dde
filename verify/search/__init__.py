"""Search for counterexamples: Hypothesis program generators (`generators`; the
word "strategy" is kept for sync strategies), the search and its shrinking (`search`),
and mutation testing of synchronized programs (`mutate`)."""
