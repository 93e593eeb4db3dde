/-
Syncproof.Syntax: the kernel language as Lean data.
Mirrors `semantics/ir.py` (docs/design.md section 5). Fixed text, shipped with the Python
package and copied into every export; only `Kernels/*.lean` is generated.

Two deliberate differences from the Python IR, both to keep every function
structurally recursive on a single (non-nested, non-mutual) inductive type, which
plain core Lean 4 accepts without termination proofs:
* conditions (`Compare`, `And`, `Or`, `Not`) are constructors of `Expr`; a condition
  evaluates to 1 (true) or 0 (false). The exporter puts them only where Python has a
  `Cond`, so the two readings coincide.
* a statement list is the binary tree `Stmt.seq`/`Stmt.skip`; `block [s1, s2]` builds
  it from a list, so a program term still reads like the kernel file.
-/
namespace Syncproof

/-- Comparison operators of conditions (`Compare.op` in `semantics/ir.py`). -/
inductive CmpOp where
  | eq | ne | lt | le | gt | ge
  deriving Repr, DecidableEq

/-- Integer expressions and conditions (`Expr` and `Cond` in `semantics/ir.py`). -/
inductive Expr where
  | const (value : Int)
  | var (name : String)              -- a parameter or an enclosing loop variable
  | iters (loopVar : String)         -- tracked iteration count (wait thresholds only)
  | count (engine : String)          -- tracked count of an engine's instances (wait thresholds only)
  | add (a b : Expr)
  | sub (a b : Expr)
  | mul (a b : Expr)
  | fdiv (a b : Expr)                -- Python `//` (floor division)
  | fmod (a b : Expr)                -- Python `%` (floor modulo)
  | neg (a : Expr)
  | min (a b : Expr)
  | max (a b : Expr)
  | ite (c a b : Expr)               -- `if c then a else b`
  | cmp (op : CmpOp) (a b : Expr)    -- conditions from here on: value 1 or 0
  | and (a b : Expr)
  | or (a b : Expr)
  | not (a : Expr)

/-- One index of an access (`Index` in `semantics/ir.py`): a single value, or a
half-open range `lo..hi` of values (every v with lo ≤ v < hi; none when hi ≤ lo). -/
inductive Index where
  | elem (e : Expr)
  | range (lo hi : Expr)

/-- `buffer[i1, i2, ...]` (`Access` in `semantics/ir.py`). -/
structure Access where
  buffer : String
  indices : List Index

/-- `wait ENGINE >= threshold` (`Wait` in `semantics/ir.py`). -/
structure Wait where
  engine : String
  threshold : Expr

/-- One op line (`Op` in `semantics/ir.py`). `lat` (cycles, an expression over
parameters and loop variables) is timing only: the untimed semantics never reads it.
`via := some Q` makes a DMA op: a trigger on `engine` (the op's waits), then a transfer
on queue `Q` (the op's accesses), docs/language.md "DMA queues". `replica := some G`:
one replica of logical op `G`; replicas of one group never conflict (docs/snax.md). -/
structure Op where
  engine : String
  name : String
  reads : List Access := []
  writes : List Access := []
  lat : Expr := .const 1
  waits : List Wait := []
  via : Option String := none
  replica : Option String := none

/-- Statements (`Stmt` in `semantics/ir.py`): `loop` is `for v in lo..hi { body }`,
`cond` is `if c { t } else { e }`. -/
inductive Stmt where
  | op (o : Op)
  | loop (loopVar : String) (lo hi : Expr) (body : Stmt)
  | cond (c : Expr) (thenBody elseBody : Stmt)
  | barrier
  | skip
  | seq (first rest : Stmt)

/-- A statement list, in order. -/
def block : List Stmt → Stmt
  | [] => Stmt.skip
  | s :: rest => Stmt.seq s (block rest)

/-- A kernel (`Program` in `semantics/ir.py`). `engines` lists the declared engines,
then the DMA queues (one counter each); `queues` gives each queue's increment (what one
completed transfer adds to its counter; every other engine adds 1). `params` gives each
parameter's declared lower bound (`param K >= 1`; 0 when none); defaults are not needed. -/
structure Program where
  name : String
  engines : List String
  queues : List (String × Nat) := []
  params : List (String × Nat)
  body : Stmt

/-- A parameter valuation: parameters are non-negative integers. -/
abbrev Valuation := List (String × Nat)

end Syncproof
