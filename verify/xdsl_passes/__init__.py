"""syncproof as xDSL passes (docs/snax.md, "syncproof in an xDSL pipeline").

- `syncproof-insert-sync{strategy=threshold}` (insert.py): replaces SNAX's
  `insert-sync-barrier`: the module's synchronization (cluster barriers, syncproof
  waits and signals) is replaced by what the strategy inserts, waits as ops of the
  syncproof dialect (semantics/mlir/dialect.py);
- `syncproof-verify-sync{property=bisimulation}` (check.py): checks an already
  synchronized module against the reference semantics and fails the pass with the
  counterexample trace;
- `universe.py`: both passes and the dialect for xDSL's plugin discovery (the
  `xdsl.universe` entry point), so `xdsl-opt` and tools built on it find them;
- `opt.py`: `syncproof-opt`, xdsl-opt with them registered.

The passes go through the MLIR text of the module (module.py): the importer and
`emit` read and write text, as `syncproof import-mlir` and `sync --emit mlir` do.
"""
