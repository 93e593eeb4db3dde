"""Checkers (explicit-state, later Z3), property search and the command line."""
