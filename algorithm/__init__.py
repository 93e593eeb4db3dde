"""Sync-insertion strategies: pure functions Program -> Program."""
