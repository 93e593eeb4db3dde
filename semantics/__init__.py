"""The kernel language and its meaning. Knows nothing of sync algorithms:
nothing here imports `algorithm`."""
