"""The Python API: syncproof as a library, for a caller that is a program (a
compiler's test suite, a notebook) rather than a person at a shell. The `syncproof`
package re-exports it (docs/api.md); the command line (verify/cli/) parses its
arguments, calls these functions, and formats what they return.

- `load(path)`: a kernel from a `.sync` or `.mlir` file (programs.py);
- `sync(program, strategy)`: insert synchronization (programs.py);
- `verify(program, VerifyOptions(...))`: check, and try to prove, the synchronized
  program against the reference semantics; a `Report` (checking.py);
- `simulate(program, strategy, params, profile)`: a timed run; a `Simulation` (timing.py);
- `export_lean(program, out_dir, strategy)`: a Lean 4 project (lean.py).

Failures of the property are values (verdicts in the `Report`); misuse raises a
`semantics.errors.SyncproofError`: `KernelError` for an error in a kernel,
`UsageError` for a bad argument.
"""

from verify.api.checking import Report, Scope, VerifyOptions, verify
from verify.api.lean import export_lean
from verify.api.programs import load, sync
from verify.api.timing import Simulation, simulate

__all__ = ["Report", "Scope", "Simulation", "VerifyOptions", "export_lean", "load", "simulate", "sync", "verify"]
