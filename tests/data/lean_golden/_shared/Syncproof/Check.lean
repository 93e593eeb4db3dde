/-
Syncproof.Check: an executable bounded checker, mirroring `verify/explicit.py`
(`explore`): breadth-first search over the product of the reference and counter
machines, comparing the enabled labels in every reachable product state. It only
answers yes or no (no trace: the Python checker reports those).
-/
import Syncproof.Bisim

namespace Syncproof

def sameLabels (a b : List Label) : Bool :=
  a.all (fun l => b.any (fun m => decide (l = m))) && b.all (fun l => a.any (fun m => decide (l = m)))

abbrev PState := List Nat × List Nat

def seen (visited : List PState) (x : PState) : Bool :=
  visited.any (fun y => decide (y = x))

/-- One product state is fine when both machines enable the same labels, and the
reference's T_min route agrees with its definition (`refEnabledSpec`). -/
def stateOk (u : Unrolled) (need : List (List Nat)) (st : PState) : Bool :=
  let r := refEnabled u need st.1
  sameLabels r (ctrEnabled u st.2) && sameLabels r (refEnabledSpec u st.1)

/-- Breadth-first search with fuel: one unit per state taken from the queue. Running
out of fuel answers `false`: the checker never says `true` without having explored
every reachable product state. -/
def explore (u : Unrolled) (need : List (List Nat)) : Nat → List PState → List PState → Bool
  | 0, _, _ => false
  | _ + 1, [], _ => true
  | fuel + 1, st :: queue, visited =>
    if !stateOk u need st then false
    else
      let (queue', visited') := (ctrEnabled u st.2).foldl (fun (acc : List PState × List PState) (l : Label) =>
        let next : PState := (refStepFn u st.1 l, ctrStepFn u st.2 l)
        if seen acc.2 next then acc else (acc.1 ++ [next], next :: acc.2)) (queue, visited)
      explore u need fuel queue' visited'

/-- Enough fuel: a product state is fixed by the counter state (the reference state is
the counter's positions without barriers), and each engine has at most
2 * (stream length) + 1 states. -/
def fuelFor (u : Unrolled) : Nat :=
  u.streams.foldl (fun (acc : Nat) (s : List Item) => acc * (2 * s.length + 1)) 1 + 1

/-- The bounded check for one valuation: `true` when the valuation is valid, stays in
the signed 32-bit range, and the two machines enable the same labels in every
reachable state. -/
def check (p : Program) (v : Valuation) : Bool :=
  let u := unroll p v
  let start : PState := (refInit u, ctrInit u)
  u.ok && inInt32Range u && explore u (needTable u) (fuelFor u) [start] [start]

/-- Soundness of the checker: its `true` answer is a proof of bisimilarity for that
valuation. (The reachable product states, related pairwise, form the bisimulation.) -/
theorem check_sound (p : Program) (v : Valuation) (h : check p v = true) :
    ValidValuation p v ∧ InInt32Range p v ∧ Bisimilar (refLTS p v) (ctrLTS p v) := by
  sorry -- PROOF OBLIGATION: soundness of the bounded checker

end Syncproof
