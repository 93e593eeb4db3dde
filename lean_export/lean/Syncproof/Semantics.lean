/-
Syncproof.Semantics: what a kernel means (docs/design.md section 2).
Mirrors `semantics/evaluate.py` (expressions), `semantics/sequential.py` (unrolling,
engine-local indices, range accesses, DMA triggers and transfers, replica groups,
dependence, T_min) and `semantics/machines.py` (the Reference and Counter machines,
counter increments, the 32-bit range). Machine states are lists of naturals, one per engine, with
the encoding of machines.py: 2 * position + (1 if an instance is in flight).
-/
import Syncproof.Syntax

namespace Syncproof

/-! ## Small list helpers (own definitions, so nothing depends on library renames) -/

def nth? {α : Type} : List α → Nat → Option α
  | [], _ => none
  | a :: _, 0 => some a
  | _ :: rest, n + 1 => nth? rest n

def nthD {α : Type} (l : List α) (n : Nat) (d : α) : α :=
  match nth? l n with
  | some a => a
  | none => d

def lookup? {α : Type} : List (String × α) → String → Option α
  | [], _ => none
  | (k, v) :: rest, x => if k = x then some v else lookup? rest x

/-- Add 1 to entry `n` (the one engine a label moves). -/
def bump : List Nat → Nat → List Nat
  | [], _ => []
  | a :: rest, 0 => (a + 1) :: rest
  | a :: rest, n + 1 => a :: bump rest n

/-! ## Expressions (semantics/evaluate.py) -/

/-- Python's `x // y` (floor division) for `y ≠ 0`. Core `Int./` is not used on
purpose: its rounding convention changed between Lean releases. `Int.ediv` rounds so
that the remainder is non-negative, which is flooring when `y > 0`; for `y < 0`,
floor (x / y) = floor ((-x) / (-y)) with a positive divisor. -/
def floorDiv (x y : Int) : Int :=
  if y < 0 then Int.ediv (-x) (-y) else Int.ediv x y

/-- Python's `x % y`: the remainder of `floorDiv`, with the sign of `y`. -/
def floorMod (x y : Int) : Int :=
  x - y * floorDiv x y

def cmpOp : CmpOp → Int → Int → Bool
  | .eq, x, y => decide (x = y)
  | .ne, x, y => !decide (x = y)
  | .lt, x, y => decide (x < y)
  | .le, x, y => decide (x ≤ y)
  | .gt, x, y => decide (y < x)
  | .ge, x, y => decide (y ≤ x)

def lift2 (f : Int → Int → Int) : Option Int → Option Int → Option Int
  | some x, some y => some (f x y)
  | _, _ => none

def ofBool (b : Bool) : Int := if b then 1 else 0

/-- The key of `count F` among the tracked values (`count_key` in `semantics/ir.py`):
its printed text, which no loop variable can be named. -/
def countKey (f : String) : String := "count(" ++ f ++ ")"

/-- Value of an expression (`eval_expr`/`eval_cond`); `none` is a run-time error
(unbound name, division by zero, `iters` or `count` outside a wait threshold). `iters`
is `none` outside wait thresholds, else the tracked values: iteration counts by loop
variable, and engine counts (`count F`, F's instances so far) by `countKey F`. -/
def evalExpr (env : List (String × Int)) (iters : Option (List (String × Nat))) : Expr → Option Int
  | .const n => some n
  | .var x => lookup? env x
  | .iters x =>
    match iters with
    | some counts => some (Int.ofNat (match lookup? counts x with | some k => k | none => 0))
    | none => none
  | .count f =>
    match iters with
    | some counts => some (Int.ofNat (match lookup? counts (countKey f) with | some k => k | none => 0))
    | none => none
  | .add a b => lift2 (fun x y => x + y) (evalExpr env iters a) (evalExpr env iters b)
  | .sub a b => lift2 (fun x y => x - y) (evalExpr env iters a) (evalExpr env iters b)
  | .mul a b => lift2 (fun x y => x * y) (evalExpr env iters a) (evalExpr env iters b)
  | .fdiv a b =>
    match evalExpr env iters a, evalExpr env iters b with
    | some x, some y => if y = 0 then none else some (floorDiv x y)
    | _, _ => none
  | .fmod a b =>
    match evalExpr env iters a, evalExpr env iters b with
    | some x, some y => if y = 0 then none else some (floorMod x y)
    | _, _ => none
  | .neg a =>
    match evalExpr env iters a with
    | some x => some (-x)
    | none => none
  | .min a b => lift2 (fun x y => if x ≤ y then x else y) (evalExpr env iters a) (evalExpr env iters b)
  | .max a b => lift2 (fun x y => if x ≤ y then y else x) (evalExpr env iters a) (evalExpr env iters b)
  | .ite c a b =>
    -- only the branch taken is evaluated, as in Python
    match evalExpr env iters c with
    | some v => if v = 0 then evalExpr env iters b else evalExpr env iters a
    | none => none
  | .cmp op a b => lift2 (fun x y => ofBool (cmpOp op x y)) (evalExpr env iters a) (evalExpr env iters b)
  | .and a b =>
    -- short-circuit, as Python's `and`
    match evalExpr env iters a with
    | some x => if x = 0 then some 0 else (evalExpr env iters b).map (fun y => ofBool (!decide (y = 0)))
    | none => none
  | .or a b =>
    match evalExpr env iters a with
    | some x => if x = 0 then (evalExpr env iters b).map (fun y => ofBool (!decide (y = 0))) else some 1
    | none => none
  | .not a => (evalExpr env iters a).map (fun x => ofBool (decide (x = 0)))

/-! ## Unrolling (semantics/sequential.py `unroll`) -/

/-- What an access touches: a buffer and, per dimension, the half-open interval
`[lo, hi)` of index values (a single index `i` is `[i, i + 1)`, a range `lo..hi` is
`[lo, hi)`). The access touches every element of the box, none when an interval is
empty: the element set `elements` in sequential.py expands. -/
abbrev Box := String × List (Int × Int)

/-- A dynamic instance (`Instance` in sequential.py). A DMA op (`via Q`) is two adjacent
instances: its trigger on the op's engine (the op's waits, no accesses, not counted on
its engine's counter) and then its transfer on queue `Q` (the op's accesses, no waits). -/
structure Inst where
  op : String
  env : List (String × Int)                 -- enclosing loop variables, innermost first
  engine : Nat                              -- position in `Program.engines`
  localIdx : Nat                            -- engine-local index among counted instances (0 on a trigger)
  accesses : List (Box × Bool)              -- (box, written?)
  waits : List (Nat × Int)                  -- (engine, threshold value)
  replica : Option String := none           -- `replica G`
  counted : Bool := true                    -- false on a DMA trigger
  trigger : Option Nat := none              -- on a DMA transfer: its trigger's index
  transfer : Option Nat := none             -- on a DMA trigger: its transfer's index

/-- An entry of an engine's stream: an instance (by program-order index) or a barrier. -/
inductive Item where
  | inst (index : Nat)
  | barrier
  deriving DecidableEq

/-- A program unrolled for one valuation (`Unrolled` in sequential.py). `incs` gives,
per engine, what one counted completion adds to its counter (a queue's increment, else
1). `ok` is false when unrolling went wrong (run-time error, a parameter missing or below
its lower bound): such valuations are not valid. -/
structure Unrolled where
  insts : List Inst
  streams : List (List Item)
  incs : List Nat
  ok : Bool

structure UState where
  env : List (String × Int)       -- parameters and loop variables, innermost first
  loopEnv : List (String × Int)   -- loop variables only
  iters : List (String × Nat)
  insts : List Inst
  streams : List (List Item)
  locals : List Nat
  ok : Bool

def indexOf (names : List String) (x : String) : Nat :=
  match names with
  | [] => 0
  | n :: rest => if n = x then 0 else indexOf rest x + 1

def evalOr0 (st : UState) (iters : Option (List (String × Nat))) (e : Expr) : Int × Bool :=
  match evalExpr st.env iters e with
  | some v => (v, true)
  | none => (0, false)

/-- The interval of one index, and whether evaluating it succeeded. -/
def evalIndex (st : UState) : Index → (Int × Int) × Bool
  | .elem e =>
    let r := evalOr0 st none e
    ((r.1, r.1 + 1), r.2)
  | .range lo hi =>
    let a := evalOr0 st none lo
    let b := evalOr0 st none hi
    ((a.1, b.1), a.2 && b.2)

/-- Stream `k` with `it` appended. -/
def appendAt (streams : List (List Item)) (k : Nat) (it : Item) : List (List Item) :=
  (List.range streams.length).map (fun j => if j = k then nthD streams j [] ++ [it] else nthD streams j [])

/-- The tracked values a wait threshold reads: every engine's count so far (its counted
instances: `locals`) by `countKey`, then the loops' iteration counts. -/
def tracked (p : Program) (st : UState) : List (String × Nat) :=
  (List.range p.engines.length).map (fun k => (countKey (nthD p.engines k ""), nthD st.locals k 0)) ++ st.iters

/-- Append the instance(s) of `o` in the current environment (the `Op` case of
`unroll`): one instance, or for a DMA op its trigger and then its transfer. -/
def addInst (p : Program) (o : Op) (st : UState) : UState :=
  let e := indexOf p.engines o.engine
  let evalAll := fun (acc : List (Box × Bool) × Bool) (aw : Access × Bool) =>
    let vals := aw.1.indices.map (fun i => evalIndex st i)
    (acc.1 ++ [((aw.1.buffer, vals.map (·.1)), aw.2)], acc.2 && vals.all (·.2))
  let (accesses, okA) :=
    (o.reads.map (fun a => (a, false)) ++ o.writes.map (fun a => (a, true))).foldl evalAll ([], true)
  let ws := o.waits.map (fun w => (indexOf p.engines w.engine, evalOr0 st (some (tracked p st)) w.threshold))
  let waits := ws.map (fun w => (w.1, w.2.1))
  let okW := ws.all (fun w => w.2.2 && decide (w.1 < p.engines.length))
  let n := st.insts.length
  match o.via with
  | none =>
    let inst : Inst :=
      { op := o.name, env := st.loopEnv, engine := e, localIdx := nthD st.locals e 0,
        accesses := accesses, waits := waits, replica := o.replica }
    { st with
      insts := st.insts ++ [inst],
      streams := appendAt st.streams e (Item.inst n),
      locals := bump st.locals e,
      ok := st.ok && okA && okW && decide (e < p.engines.length) }
  | some q =>
    let qe := indexOf p.engines q
    let trig : Inst :=
      { op := o.name, env := st.loopEnv, engine := e, localIdx := 0, accesses := [], waits := waits,
        replica := o.replica, counted := false, transfer := some (n + 1) }
    let xfer : Inst :=
      { op := o.name, env := st.loopEnv, engine := qe, localIdx := nthD st.locals qe 0,
        accesses := accesses, waits := [], replica := o.replica, trigger := some n }
    { st with
      insts := st.insts ++ [trig, xfer],
      streams := appendAt (appendAt st.streams e (Item.inst n)) qe (Item.inst (n + 1)),
      locals := bump st.locals qe,
      ok := st.ok && okA && okW && decide (e < p.engines.length) && decide (qe < p.engines.length) }

def bumpIters (counts : List (String × Nat)) (x : String) : List (String × Nat) :=
  (x, (match lookup? counts x with | some k => k | none => 0) + 1) :: counts

def unrollStmt (p : Program) : Stmt → UState → UState
  | .skip, st => st
  | .seq a b, st => unrollStmt p b (unrollStmt p a st)
  | .op o, st => addInst p o st
  | .barrier, st => { st with streams := st.streams.map (fun s => s ++ [Item.barrier]) }
  | .cond c t e, st =>
    match evalExpr st.env none c with
    | some v => if v = 0 then unrollStmt p e st else unrollStmt p t st
    | none => { st with ok := false }
  | .loop x lo hi body, st =>
    match evalExpr st.env none lo, evalExpr st.env none hi with
    | some a, some b =>
      -- any integer bounds; b <= a runs zero times (`range` in Python)
      (List.range (b - a).toNat).foldl (fun (s : UState) (k : Nat) =>
        let v := a + Int.ofNat k
        let s1 := { s with env := (x, v) :: s.env, loopEnv := (x, v) :: s.loopEnv,
                           iters := bumpIters s.iters x }
        let s2 := unrollStmt p body s1
        { s2 with env := s2.env.drop 1, loopEnv := s2.loopEnv.drop 1 }) st
    | _, _ => { st with ok := false }

/-- Every parameter has a value at or above its declared lower bound (`unroll` raises a
UsageError or an EvalError otherwise). -/
def paramsGiven (p : Program) (v : Valuation) : Bool :=
  p.params.all (fun x => match lookup? v x.1 with | some k => decide (x.2 ≤ k) | none => false)

/-- What one completion adds to engine `e`'s counter: its queue's increment, else 1. -/
def incrementOf (p : Program) (e : String) : Nat :=
  match lookup? p.queues e with
  | some k => k
  | none => 1

def unroll (p : Program) (v : Valuation) : Unrolled :=
  let st : UState :=
    { env := p.params.map (fun x => (x.1, Int.ofNat (match lookup? v x.1 with | some k => k | none => 0))),
      loopEnv := [], iters := [], insts := [],
      streams := p.engines.map (fun _ => []), locals := p.engines.map (fun _ => 0), ok := true }
  let fin := unrollStmt p p.body st
  { insts := fin.insts, streams := fin.streams, incs := p.engines.map (incrementOf p),
    ok := fin.ok && paramsGiven p v }

/-! ## Dependence and T_min (sequential.py `depends_on`, `requirements`) -/

/-- Do two boxes share an element? In every dimension both intervals are non-empty and
they intersect; boxes of different dimension never do (their elements differ). -/
def overlaps : List (Int × Int) → List (Int × Int) → Bool
  | [], [] => true
  | (a, b) :: r, (c, d) :: r' =>
    decide (a < b) && decide (c < d) && decide (a < d) && decide (c < b) && overlaps r r'
  | _, _ => false

/-- `x` and `y` access a common element and at least one of the two accesses writes it. -/
def conflict (x y : Inst) : Bool :=
  y.accesses.any (fun bw => x.accesses.any (fun bw' =>
    decide (bw.1.1 = bw'.1.1) && overlaps bw.1.2 bw'.1.2 && (bw.2 || bw'.2)))

/-- Replicas of one logical op (`replica G` on both) never conflict (docs/snax.md). -/
def sameReplica (x y : Inst) : Bool :=
  match x.replica, y.replica with
  | some g, some h => decide (g = h)
  | _, _ => false

/-- Instance `y` depends on instance `x` (both by program-order index): `x` precedes
`y`, they run on different engines, they are not replicas of one logical op, and they
conflict on an element. -/
def dependsOn (u : Unrolled) (y x : Nat) : Bool :=
  match nth? u.insts y, nth? u.insts x with
  | some iy, some ix =>
    decide (x < y) && !decide (ix.engine = iy.engine) && !sameReplica ix iy && conflict ix iy
  | _, _ => false

/-- T_min(y, F) = 1 + local index of the last F-instance y depends on (0: none). -/
def tmin (u : Unrolled) (y f : Nat) : Nat :=
  (List.range y).foldl (fun (acc : Nat) (x : Nat) =>
    match nth? u.insts x with
    | some ix => if ix.engine = f ∧ dependsOn u y x then (if acc < ix.localIdx + 1 then ix.localIdx + 1 else acc) else acc
    | none => acc) 0

def engineCount (u : Unrolled) : Nat := u.streams.length

/-- The T_min table, one row per instance (computed once per check). -/
def needTable (u : Unrolled) : List (List Nat) :=
  (List.range u.insts.length).map (fun y => (List.range (engineCount u)).map (fun f => tmin u y f))

/-! ## Labels -/

inductive Kind where
  | issue | complete
  deriving DecidableEq, Repr

structure Label where
  kind : Kind
  inst : Nat
  deriving DecidableEq, Repr

def engineOf (u : Unrolled) (y : Nat) : Nat :=
  match nth? u.insts y with
  | some i => i.engine
  | none => 0

def countedInst (u : Unrolled) (x : Nat) : Bool :=
  match nth? u.insts x with
  | some i => i.counted
  | none => false

/-- Whose producers must have completed before `y` issues: a DMA trigger waits for its
transfer's (the trigger is the only place a transfer can be synchronized), a transfer
for none (it follows its trigger), any other instance for its own. -/
def guarded (u : Unrolled) (y : Nat) : Option Nat :=
  match nth? u.insts y with
  | some i =>
    match i.transfer, i.trigger with
    | some t, _ => some t
    | none, some _ => none
    | none, none => some y
  | none => some y

/-- The trigger of `y` when `y` is a DMA transfer. -/
def triggerOf (u : Unrolled) (y : Nat) : Option Nat :=
  match nth? u.insts y with
  | some i => i.trigger
  | none => none

/-! ## Reference machine (machines.py `Reference`) -/

/-- An engine's instances without barriers: the reference ignores barriers. -/
def refStream (u : Unrolled) (e : Nat) : List Nat :=
  (nthD u.streams e []).filterMap (fun it => match it with | .inst i => some i | .barrier => none)

/-- Has instance `x` completed in reference state `s`? Its engine has moved past it. -/
def completedRef (u : Unrolled) (s : List Nat) (x : Nat) : Bool :=
  let e := engineOf u x
  ((refStream u e).take (nthD s e 0 / 2)).any (fun i => decide (i = x))

/-- Counted instances engine `e` has completed in reference state `s` (triggers excluded). -/
def countedDone (u : Unrolled) (s : List Nat) (e : Nat) : Nat :=
  ((refStream u e).take (nthD s e 0 / 2)).foldl (fun (c : Nat) (i : Nat) => if countedInst u i then c + 1 else c) 0

/-- A DMA transfer may issue once its trigger has completed (always true otherwise). -/
def triggerDoneRef (u : Unrolled) (s : List Nat) (y : Nat) : Bool :=
  match triggerOf u y with
  | some t => completedRef u s t
  | none => true

/-- Every instance `y` must wait for (see `guarded`) has completed. -/
def producersDone (u : Unrolled) (s : List Nat) (y : Nat) : Bool :=
  match guarded u y with
  | some z => (List.range z).all (fun x => !dependsOn u z x || completedRef u s x)
  | none => true

/-- The specification, straight from docs/design.md: `y` may issue iff every instance it
depends on has completed (for a DMA trigger: every instance its transfer depends on; a
transfer once its trigger has completed); waits and barriers are ignored. -/
inductive RefStep (u : Unrolled) : List Nat → Label → List Nat → Prop where
  | issue (s : List Nat) (e y : Nat)
      (idle : nthD s e 0 % 2 = 0)
      (next : nth? (refStream u e) (nthD s e 0 / 2) = some y)
      (ready : ∀ z x : Nat, guarded u y = some z → dependsOn u z x = true → completedRef u s x = true)
      (after : triggerDoneRef u s y = true) :
      RefStep u s (Label.mk Kind.issue y) (bump s e)
  | complete (s : List Nat) (e y : Nat)
      (busy : nthD s e 0 % 2 = 1)
      (current : nth? (refStream u e) (nthD s e 0 / 2) = some y) :
      RefStep u s (Label.mk Kind.complete y) (bump s e)

def refInit (u : Unrolled) : List Nat := u.streams.map (fun _ => 0)

/-- The T_min row `y` must meet (`guarded`; none for a transfer). -/
def needOf (u : Unrolled) (need : List (List Nat)) (y : Nat) : List Nat :=
  match guarded u y with
  | some z => nthD need z []
  | none => []

/-- Executable: the labels enabled in `s`, through the T_min table (`Reference.enabled`):
every engine has completed at least T_min counted instances. -/
def refEnabled (u : Unrolled) (need : List (List Nat)) (s : List Nat) : List Label :=
  (List.range (engineCount u)).filterMap (fun e =>
    let v := nthD s e 0
    match nth? (refStream u e) (v / 2) with
    | none => none
    | some y =>
      if v % 2 = 1 then some (Label.mk Kind.complete y)
      else if (List.range (engineCount u)).all (fun f => decide (nthD (needOf u need y) f 0 ≤ countedDone u s f)) &&
          triggerDoneRef u s y
      then some (Label.mk Kind.issue y) else none)

/-- Executable: the same, straight from the definition (dependence and completion),
for testing the T_min route against it in every state the checker reaches. -/
def refEnabledSpec (u : Unrolled) (s : List Nat) : List Label :=
  (List.range (engineCount u)).filterMap (fun e =>
    let v := nthD s e 0
    match nth? (refStream u e) (v / 2) with
    | none => none
    | some y =>
      if v % 2 = 1 then some (Label.mk Kind.complete y)
      else if producersDone u s y && triggerDoneRef u s y
      then some (Label.mk Kind.issue y) else none)

/-- Executable step (`Reference.step`): the label's engine moves on by one half-step. -/
def refStepFn (u : Unrolled) (s : List Nat) (l : Label) : List Nat := bump s (engineOf u l.inst)

/-! ## Counter machine (machines.py `Counter`) -/

/-- One stream item passed: a barrier resets the count, a counted instance adds `inc`,
a DMA trigger adds nothing. -/
def countStep (u : Unrolled) (inc : Nat) (c : Nat) (it : Item) : Nat :=
  match it with
  | .barrier => 0
  | .inst i => if countedInst u i then c + inc else c

/-- The counter C[E] when engine E (increment `inc`) stands at `pos` of its stream: its
counted instances completed since the last barrier, times `inc`. -/
def since (u : Unrolled) (inc : Nat) (stream : List Item) (pos : Nat) : Nat :=
  (stream.take pos).foldl (countStep u inc) 0

def counterValue (u : Unrolled) (s : List Nat) (f : Nat) : Nat :=
  since u (nthD u.incs f 1) (nthD u.streams f []) (nthD s f 0 / 2)

def instWaits (u : Unrolled) (y : Nat) : List (Nat × Int) :=
  match nth? u.insts y with
  | some i => i.waits
  | none => []

/-- Has instance `x` completed in counter state `s`? Its engine has moved past it. -/
def completedCtr (u : Unrolled) (s : List Nat) (x : Nat) : Bool :=
  let e := engineOf u x
  ((nthD u.streams e []).take (nthD s e 0 / 2)).any (fun it => decide (it = Item.inst x))

def triggerDoneCtr (u : Unrolled) (s : List Nat) (y : Nat) : Bool :=
  match triggerOf u y with
  | some t => completedCtr u s t
  | none => true

/-- Every engine stands idle at a barrier. -/
def allAtBarrier (u : Unrolled) (s : List Nat) : Bool :=
  (List.range (engineCount u)).all (fun e =>
    let v := nthD s e 0
    decide (v % 2 = 0) && decide (nth? (nthD u.streams e []) (v / 2) = some Item.barrier))

/-- When every engine stands at a barrier, all pass it together (counters reset, as
`since` restarts after a barrier). Fuel: one pass per barrier at most. -/
def passBarriersFuel (u : Unrolled) : Nat → List Nat → List Nat
  | 0, s => s
  | fuel + 1, s => if allAtBarrier u s then passBarriersFuel u fuel (s.map (fun v => v + 2)) else s

def passBarriers (u : Unrolled) (s : List Nat) : List Nat :=
  passBarriersFuel u (nthD u.streams 0 []).length s

/-- The compiled program: `y` may issue iff C[F] ≥ t for each of its waits `(F, t)`
(and, for a DMA transfer, once its trigger has completed); completing may let every
engine pass a barrier. -/
inductive CtrStep (u : Unrolled) : List Nat → Label → List Nat → Prop where
  | issue (s : List Nat) (e y : Nat)
      (idle : nthD s e 0 % 2 = 0)
      (next : nth? (nthD u.streams e []) (nthD s e 0 / 2) = some (Item.inst y))
      (waitsHold : ∀ (f : Nat) (t : Int), (f, t) ∈ instWaits u y → t ≤ Int.ofNat (counterValue u s f))
      (after : triggerDoneCtr u s y = true) :
      CtrStep u s (Label.mk Kind.issue y) (bump s e)
  | complete (s : List Nat) (e y : Nat)
      (busy : nthD s e 0 % 2 = 1)
      (current : nth? (nthD u.streams e []) (nthD s e 0 / 2) = some (Item.inst y)) :
      CtrStep u s (Label.mk Kind.complete y) (passBarriers u (bump s e))

def ctrInit (u : Unrolled) : List Nat := passBarriers u (u.streams.map (fun _ => 0))

/-- Executable: the labels enabled in `s` (`Counter.enabled`). -/
def ctrEnabled (u : Unrolled) (s : List Nat) : List Label :=
  (List.range (engineCount u)).filterMap (fun e =>
    let v := nthD s e 0
    match nth? (nthD u.streams e []) (v / 2) with
    | some (.inst y) =>
      if v % 2 = 1 then some (Label.mk Kind.complete y)
      else if (instWaits u y).all (fun w => decide (w.2 ≤ Int.ofNat (counterValue u s w.1))) &&
          triggerDoneCtr u s y
      then some (Label.mk Kind.issue y) else none
    | _ => none)

/-- Executable step (`Counter.step`). -/
def ctrStepFn (u : Unrolled) (s : List Nat) (l : Label) : List Nat :=
  let s' := bump s (engineOf u l.inst)
  match l.kind with
  | .issue => s'
  | .complete => passBarriers u s'

/-! ## The signed 32-bit range (machines.py `counter_range_violation`)

A semaphore is a signed 32-bit register. The semantics above counts with unbounded
naturals; `inInt32Range` says where the hardware agrees with it: no counter value and no
wait threshold of the valuation leaves [-2^31, 2^31 - 1]. -/

def int32Min : Int := -2147483648
def int32Max : Int := 2147483647

/-- The largest value counter `f` reaches: its counts only grow between barriers, so one
pass over its stream, keeping the maximum, sees it. -/
def maxCounter (u : Unrolled) (f : Nat) : Nat :=
  let inc := nthD u.incs f 1
  ((nthD u.streams f []).foldl (fun (acc : Nat × Nat) (it : Item) =>
    let c := countStep u inc acc.1 it
    (c, if acc.2 < c then c else acc.2)) (0, 0)).2

def inInt32Range (u : Unrolled) : Bool :=
  (List.range (engineCount u)).all (fun f => decide (Int.ofNat (maxCounter u f) ≤ int32Max)) &&
  u.insts.all (fun i => i.waits.all (fun w => decide (int32Min ≤ w.2) && decide (w.2 ≤ int32Max)))

/-! ## Agreement of the executable functions with the relations

The checker evaluates `refEnabled` (through T_min) and `refEnabledSpec` (through the
definition) in every state it reaches and fails if they differ, so on every bounded
instance it proves, the T_min route agrees with the definition in the reachable
states. The general statements are proof obligations. -/

theorem refEnabledSpec_iff (p : Program) (v : Valuation) (s : List Nat) (l : Label)
    (hlen : s.length = engineCount (unroll p v)) :
    l ∈ refEnabledSpec (unroll p v) s ↔ RefStep (unroll p v) s l (refStepFn (unroll p v) s l) := by
  sorry -- PROOF OBLIGATION: the executable reference step agrees with `RefStep`

theorem ctrEnabled_iff (p : Program) (v : Valuation) (s : List Nat) (l : Label)
    (hlen : s.length = engineCount (unroll p v)) :
    l ∈ ctrEnabled (unroll p v) s ↔ CtrStep (unroll p v) s l (ctrStepFn (unroll p v) s l) := by
  sorry -- PROOF OBLIGATION: the executable counter step agrees with `CtrStep`

end Syncproof
