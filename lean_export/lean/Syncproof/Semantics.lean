/-
Syncproof.Semantics: what a kernel means (docs/design.md section 2).
Mirrors `semantics/evaluate.py` (expressions), `semantics/sequential.py` (unrolling,
engine-local indices, dependence, T_min) and `semantics/machines.py` (the Reference
and Counter machines). Machine states are lists of naturals, one per engine, with
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

/-- Value of an expression (`eval_expr`/`eval_cond`); `none` is a run-time error
(unbound name, division by zero, `iters` outside a wait threshold). `iters` is
`none` outside wait thresholds, else the tracked iteration counts. -/
def evalExpr (env : List (String × Int)) (iters : Option (List (String × Nat))) : Expr → Option Int
  | .const n => some n
  | .var x => lookup? env x
  | .iters x =>
    match iters with
    | some counts => some (Int.ofNat (match lookup? counts x with | some k => k | none => 0))
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

/-- A buffer element: buffer name and index values. -/
abbrev Element := String × List Int

/-- A dynamic instance (`Instance` in sequential.py). -/
structure Inst where
  op : String
  env : List (String × Int)                 -- enclosing loop variables, innermost first
  engine : Nat                              -- position in `Program.engines`
  localIdx : Nat                            -- engine-local index
  accesses : List (Element × Bool)          -- (element, written?)
  waits : List (Nat × Int)                  -- (engine, threshold value)

/-- An entry of an engine's stream: an instance (by program-order index) or a barrier. -/
inductive Item where
  | inst (index : Nat)
  | barrier
  deriving DecidableEq

/-- A program unrolled for one valuation (`Unrolled` in sequential.py). `ok` is false
when unrolling went wrong (run-time error): such valuations are not valid. -/
structure Unrolled where
  insts : List Inst
  streams : List (List Item)
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

/-- Append the instance of `o` in the current environment (the `Op` case of `unroll`). -/
def addInst (p : Program) (o : Op) (st : UState) : UState :=
  let e := indexOf p.engines o.engine
  let evalAll := fun (acc : List (Element × Bool) × Bool) (aw : Access × Bool) =>
    let vals := aw.1.indices.map (fun i => evalOr0 st none i)
    (acc.1 ++ [((aw.1.buffer, vals.map (·.1)), aw.2)], acc.2 && vals.all (·.2))
  let (accesses, okA) :=
    (o.reads.map (fun a => (a, false)) ++ o.writes.map (fun a => (a, true))).foldl evalAll ([], true)
  let ws := o.waits.map (fun w => (indexOf p.engines w.engine, evalOr0 st (some st.iters) w.threshold))
  let inst : Inst :=
    { op := o.name, env := st.loopEnv, engine := e, localIdx := nthD st.locals e 0,
      accesses := accesses, waits := ws.map (fun w => (w.1, w.2.1)) }
  let n := st.insts.length
  { st with
    insts := st.insts ++ [inst],
    streams := (List.range st.streams.length).map (fun k =>
      if k = e then nthD st.streams k [] ++ [Item.inst n] else nthD st.streams k []),
    locals := bump st.locals e,
    ok := st.ok && okA && decide (e < p.engines.length) &&
      ws.all (fun w => w.2.2 && decide (w.1 < p.engines.length)) }

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

/-- Parameters must all have a value (`unroll` raises a UsageError otherwise). -/
def paramsGiven (p : Program) (v : Valuation) : Bool :=
  p.params.all (fun x => (lookup? v x).isSome)

def unroll (p : Program) (v : Valuation) : Unrolled :=
  let st : UState :=
    { env := p.params.map (fun x => (x, Int.ofNat (match lookup? v x with | some k => k | none => 0))),
      loopEnv := [], iters := [], insts := [],
      streams := p.engines.map (fun _ => []), locals := p.engines.map (fun _ => 0), ok := true }
  let fin := unrollStmt p p.body st
  { insts := fin.insts, streams := fin.streams, ok := fin.ok && paramsGiven p v }

/-! ## Dependence and T_min (sequential.py `depends_on`, `requirements`) -/

def conflict (x y : Inst) : Bool :=
  y.accesses.any (fun ew => x.accesses.any (fun ew' => decide (ew.1 = ew'.1) && (ew.2 || ew'.2)))

/-- Instance `y` depends on instance `x` (both by program-order index): `x` precedes
`y`, they run on different engines, and they conflict on an element. -/
def dependsOn (u : Unrolled) (y x : Nat) : Bool :=
  match nth? u.insts y, nth? u.insts x with
  | some iy, some ix => decide (x < y) && !decide (ix.engine = iy.engine) && conflict ix iy
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

/-! ## Reference machine (machines.py `Reference`) -/

/-- An engine's instances without barriers: the reference ignores barriers. -/
def refStream (u : Unrolled) (e : Nat) : List Nat :=
  (nthD u.streams e []).filterMap (fun it => match it with | .inst i => some i | .barrier => none)

/-- Has instance `x` completed in reference state `s`? (in-order completion) -/
def completedRef (u : Unrolled) (s : List Nat) (x : Nat) : Bool :=
  match nth? u.insts x with
  | some ix => decide (ix.localIdx < nthD s ix.engine 0 / 2)
  | none => false

/-- The specification, straight from docs/design.md: `y` may issue iff every instance it
depends on has completed; waits and barriers are ignored. -/
inductive RefStep (u : Unrolled) : List Nat → Label → List Nat → Prop where
  | issue (s : List Nat) (e y : Nat)
      (idle : nthD s e 0 % 2 = 0)
      (next : nth? (refStream u e) (nthD s e 0 / 2) = some y)
      (ready : ∀ x : Nat, dependsOn u y x = true → completedRef u s x = true) :
      RefStep u s (Label.mk Kind.issue y) (bump s e)
  | complete (s : List Nat) (e y : Nat)
      (busy : nthD s e 0 % 2 = 1)
      (current : nth? (refStream u e) (nthD s e 0 / 2) = some y) :
      RefStep u s (Label.mk Kind.complete y) (bump s e)

def refInit (u : Unrolled) : List Nat := u.streams.map (fun _ => 0)

/-- Executable: the labels enabled in `s`, through the T_min table (`Reference.enabled`). -/
def refEnabled (u : Unrolled) (need : List (List Nat)) (s : List Nat) : List Label :=
  (List.range (engineCount u)).filterMap (fun e =>
    let v := nthD s e 0
    match nth? (refStream u e) (v / 2) with
    | none => none
    | some y =>
      if v % 2 = 1 then some (Label.mk Kind.complete y)
      else if (List.range (engineCount u)).all (fun f => decide (nthD (nthD need y []) f 0 ≤ nthD s f 0 / 2))
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
      else if (List.range y).all (fun x => !dependsOn u y x || completedRef u s x)
      then some (Label.mk Kind.issue y) else none)

def engineOf (u : Unrolled) (y : Nat) : Nat :=
  match nth? u.insts y with
  | some i => i.engine
  | none => 0

/-- Executable step (`Reference.step`): the label's engine moves on by one half-step. -/
def refStepFn (u : Unrolled) (s : List Nat) (l : Label) : List Nat := bump s (engineOf u l.inst)

/-! ## Counter machine (machines.py `Counter`) -/

/-- Instances of a stream completed since the last barrier before position `pos`:
the counter C[E] when engine E stands at `pos`. -/
def since (stream : List Item) (pos : Nat) : Nat :=
  (stream.take pos).foldl (fun (c : Nat) (it : Item) => match it with | .barrier => 0 | .inst _ => c + 1) 0

def counterValue (u : Unrolled) (s : List Nat) (f : Nat) : Nat :=
  since (nthD u.streams f []) (nthD s f 0 / 2)

def instWaits (u : Unrolled) (y : Nat) : List (Nat × Int) :=
  match nth? u.insts y with
  | some i => i.waits
  | none => []

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

/-- The compiled program: `y` may issue iff C[F] ≥ t for each of its waits `(F, t)`;
completing may let every engine pass a barrier. -/
inductive CtrStep (u : Unrolled) : List Nat → Label → List Nat → Prop where
  | issue (s : List Nat) (e y : Nat)
      (idle : nthD s e 0 % 2 = 0)
      (next : nth? (nthD u.streams e []) (nthD s e 0 / 2) = some (Item.inst y))
      (waitsHold : ∀ (f : Nat) (t : Int), (f, t) ∈ instWaits u y → t ≤ Int.ofNat (counterValue u s f)) :
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
      else if (instWaits u y).all (fun w => decide (w.2 ≤ Int.ofNat (counterValue u s w.1)))
      then some (Label.mk Kind.issue y) else none
    | _ => none)

/-- Executable step (`Counter.step`). -/
def ctrStepFn (u : Unrolled) (s : List Nat) (l : Label) : List Nat :=
  let s' := bump s (engineOf u l.inst)
  match l.kind with
  | .issue => s'
  | .complete => passBarriers u s'

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
