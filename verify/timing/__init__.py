"""Timing: a timed scheduler over the same machines the checkers explore
(`scheduler`), machine cost profiles (`profiles/*.toml`) and plots (`plots`)."""
