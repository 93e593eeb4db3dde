/-
Syncproof.Bisim: the property checked (docs/design.md section 2, "bisimilar"), and the
minimal-threshold characterization. Mirrors the question `verify/explicit.py` answers
for one valuation; the T_min definition itself is `tmin` (semantics/sequential.py).
-/
import Syncproof.Semantics

namespace Syncproof

/-- A labelled transition system over the common labels `issue y` / `complete y`. -/
structure LTS where
  State : Type
  init : State
  step : State → Label → State → Prop

/-- `R` is a (strong) bisimulation: related states match each other's steps, label by
label, into related states. -/
def IsBisimulation (A B : LTS) (R : A.State → B.State → Prop) : Prop :=
  ∀ s t, R s t →
    (∀ l s', A.step s l s' → ∃ t', B.step t l t' ∧ R s' t') ∧
    (∀ l t', B.step t l t' → ∃ s', A.step s l s' ∧ R s' t')

/-- Two systems are bisimilar when some bisimulation relates their initial states. -/
def Bisimilar (A B : LTS) : Prop :=
  ∃ R : A.State → B.State → Prop, IsBisimulation A B R ∧ R A.init B.init

/-- The reference semantics of a program for one valuation. -/
def refLTS (p : Program) (v : Valuation) : LTS :=
  { State := List Nat, init := refInit (unroll p v), step := RefStep (unroll p v) }

/-- The counter semantics (its own waits and barriers) for one valuation. -/
def ctrLTS (p : Program) (v : Valuation) : LTS :=
  { State := List Nat, init := ctrInit (unroll p v), step := CtrStep (unroll p v) }

/-- A valuation the program is defined for: every parameter has a value and unrolling
meets no run-time error (division by zero, unknown name). -/
def ValidValuation (p : Program) (v : Valuation) : Prop :=
  (unroll p v).ok = true

/-- No semaphore value and no wait threshold of the valuation leaves the signed 32-bit
range: where the 32-bit hardware agrees with the unbounded counters above (the
all-values proof's statement, docs/proofs.md "The 32-bit range"). -/
def InInt32Range (p : Program) (v : Valuation) : Prop :=
  inInt32Range (unroll p v) = true

/-! ## Minimal thresholds (docs/design.md section 2)

Because an engine completes in order, C[F] ≥ k says exactly that F's first k
instances have completed, so T_min(y, F) (`tmin`) is the threshold the reference
imposes. The effective threshold of `y` on `F` is the largest of its waits on `F`
(0 when none: a threshold ≤ 0 always holds). -/

def effectiveWait (u : Unrolled) (y f : Nat) : Int :=
  (instWaits u y).foldl (fun (acc : Int) (w : Nat × Int) => if w.1 = f ∧ acc < w.2 then w.2 else acc) 0

/-- Every instance waits on every engine for exactly T_min. -/
def ExactThresholds (u : Unrolled) : Prop :=
  ∀ y f, y < u.insts.length → f < engineCount u → effectiveWait u y f = Int.ofNat (tmin u y f)

def barrierFree (u : Unrolled) : Bool :=
  u.streams.all (fun s => s.all (fun it => !decide (it = Item.barrier)))

/-- Every counter steps by one and no op is a DMA op: T_min is then a threshold on
C[F] itself (with a queue's increment K it would be K * T_min, and a trigger waits for
its transfer's producers). -/
def plainCounters (u : Unrolled) : Bool :=
  u.incs.all (fun k => decide (k = 1)) && u.insts.all (fun i => i.counted && i.trigger.isNone)

/-- Exact thresholds are sufficient for bisimilarity in a barrier-free program (not
necessary: a wait may be masked by in-order execution, which is why the checked
property is global). Stated for plain counters (`plainCounters`) only. -/
theorem exactThresholds_bisim (p : Program) (v : Valuation)
    (hvalid : ValidValuation p v) (hfree : barrierFree (unroll p v) = true)
    (hplain : plainCounters (unroll p v) = true) (hexact : ExactThresholds (unroll p v)) :
    Bisimilar (refLTS p v) (ctrLTS p v) := by
  sorry -- PROOF OBLIGATION: exact T_min waits make the counter machine bisimilar

end Syncproof
