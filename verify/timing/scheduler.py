"""A deterministic timed scheduler over the untimed machines (docs/design.md section 2).

No third copy of the semantics: the scheduler only asks a machine (`Counter` for a
synchronized program, `Reference` for the `oracle`) which labels are enabled and
takes them with `step`; time is bookkeeping around those calls. Every timed run is
therefore one of the machine's traces (tests replay it).

Timing rules, with the costs of a `Profile`:
- every engine runs its stream in order; an instance keeps its engine busy for
  `max(lat, min_instruction_cycles)`, then completes (the `complete` label); a latency
  expression (`lat 64 + 2 * min(C, 512)`) is evaluated per instance, in its loop
  environment; a negative value is a kernel error at the expression;
- before issuing, the engine evaluates the instance's waits: `wait_cycles` per wait
  plus `wait_op_cycles` per arithmetic operation of its threshold expression as written
  (`Unrolled.source`: a loop register, like `iters(v)` and `count(F)`, is an atom; so a
  complex threshold is not free); if the machine then enables the issue, it issues;
- else the engine stalls until a completion (or a barrier pass) enables it, and
  resumes `wake_cycles` after that event (counter signal-to-wake latency);
- engines that all stand at a barrier pass it `barrier_cycles` after the last one
  arrived (the counter machine passes it as soon as the last engine arrives; the
  scheduler holds the released engines for that long);
- peer primitives (docs/peers.md): each `waitflag` costs `flag_wait_cycles` and each
  `pop` `token_pop_cycles` before the issue (like a wait); each `setflag` costs
  `flag_set_cycles` and each `push` `token_push_cycles` after the instance's own
  time, before its completion (the set or push is an instruction after the op on the
  same engine; the signal is visible at the completion, and its travel time to a
  stalled consumer is the consumer's `wake_cycles`);
- a DMA op (`via Q`) is a trigger on its engine, busy `dma_trigger_cycles` (its waits
  are evaluated there), then a transfer on queue Q, busy the op's `lat`, in FIFO order
  on Q; the queue evaluates no waits and tracks no loops or counts;
- tracking loop counts costs `iteration_cycles` per started iteration of a tracked
  loop (one whose `iters(v)` appears in a threshold of `Unrolled.program`, where the
  registers are inlined: so also one a register's header reads, when a threshold reads
  that register), on every engine, paid before the engine's next instance (every
  engine evaluates every loop bound);
- tracking an engine count costs `iteration_cycles` per execution of a statement body
  (a loop iteration, a taken `if` branch, the top level) that directly holds an op
  counted on a tracked engine F (one whose `count(F)` appears in a threshold, registers
  inlined as for loops: F's compute ops, or the transfers of a queue F), on every
  engine, paid before the engine's next instance, as for loops: the body adds its
  number of F-ops to the count register once. The execution is charged at its first
  F-op in program order (a DMA op's trigger);
- a loop register (`for v in lo..hi with r = init step s`, docs/language.md) is kept
  only by the engines that read it (`register_readers`: an op of the engine has a wait
  threshold naming r, or the engine keeps a register whose init or step names r), and
  costs each of them, paid before the engine's next instance as for loops:
  `wait_op_cycles * max(1, arithmetic_ops(init))` at every entry of the loop (setting a
  register is at least one instruction) and, when it has a step (a literal `step 0` is
  none), `wait_op_cycles * (1 + arithmetic_ops(step))` at every back-edge (each
  iteration after the first within one entry). Entries and back-edges are read from
  the instances' loop environments in program order, as for iteration tracking: an
  entry is an instance inside the loop whose enclosing loops' values differ from the
  last instance inside it (or the first such instance), and brings `v - lo` back-edges
  (lo evaluated there); a later instance of the same entry brings `v - v_previous`. So
  a loop entry with no instance in it (a zero-trip loop, or a body whose ops all sit in
  untaken branches or empty inner loops) and the iterations after an entry's last
  instance are not charged, the approximation of iteration tracking (which charges
  only the iterations that hold an instance; an iteration with none between two that
  do is a back-edge here, as the register is advanced through it). A DMA op's
  waits are its trigger's, so its registers are kept by the triggering engine, never
  by the queue.
The oracle uses the same busy times and no synchronization cost at all.

Ties are broken by engine order, so runs are deterministic.
"""

from __future__ import annotations

import heapq
import tomllib
from pathlib import Path

import attrs

from semantics.errors import EvalError, SyncproofError
from semantics.evaluate import arithmetic_ops, eval_expr
from semantics.ir import For, If, Iters, Op, Program, Var, count_key, walk_expr, walk_stmts
from semantics.machines import COMPLETE, ISSUE, Counter, Label, Reference
from semantics.registers import register_ops, registers_of
from semantics.sequential import Unrolled, counted_engines

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"


class Failure(SyncproofError):
    """The timed run cannot finish."""


class Deadlock(Failure):
    """The timed run cannot finish: the synchronized program deadlocks."""


class HardwareError(Failure):
    """The timed run reached a hardware error (a 1-bit flag set while already set)."""


@attrs.frozen
class Profile:
    """Machine costs, in cycles of `clock_ghz` (see verify/timing/profiles/*.toml for sources)."""

    name: str
    clock_ghz: float = 1.0
    min_instruction_cycles: int = 0
    wait_cycles: int = 0
    wait_op_cycles: int = 0
    wake_cycles: int = 0
    barrier_cycles: int = 0
    iteration_cycles: int = 0
    flag_set_cycles: int = 0
    flag_wait_cycles: int = 0
    token_push_cycles: int = 0
    token_pop_cycles: int = 0
    # A DMA op (`via Q`): its trigger keeps the issuing engine busy this long; the transfer
    # then takes the op's `lat` on the queue (docs/design.md, "DMA triggered by a compute engine").
    dma_trigger_cycles: int = 0
    semaphore_budget: int = 256  # semaphores per core; `sync` warns above it (not a cost)
    description: str = ""


ZERO = Profile("zero")  # every synchronization cost 0 (tests: threshold must equal oracle)

_FIELDS = {f.name for f in attrs.fields(Profile)}


def load_profile(name_or_path: str) -> Profile:
    """A profile by name (verify/timing/profiles/NAME.toml) or by path to a TOML file."""
    from semantics.errors import UsageError

    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.toml"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.toml")))
        raise UsageError(f"unknown profile '{name_or_path}' (profiles: {known}, or a path to a .toml file)") from None
    except (tomllib.TOMLDecodeError, OSError) as err:
        raise UsageError(f"cannot read profile {path}: {err}") from None
    costs = data.get("costs", {})
    unknown = set(costs) - _FIELDS
    if unknown:
        raise UsageError(f"profile {path}: unknown field(s) {', '.join(sorted(unknown))}")
    for key, value in costs.items():
        if not isinstance(value, (int, float)) or value < 0:
            raise UsageError(f"profile {path}: {key} must be a non-negative number")
    return Profile(name=data.get("name", path.stem), description=data.get("description", ""),
                   **{k: v for k, v in costs.items() if k != "name"})


def instance_latency(unrolled: Unrolled, inst) -> int:
    """The latency of one instance: the literal, or the expression evaluated with the
    parameter values and the instance's loop variables (an EvalError when negative)."""
    lat = inst.op.lat
    if isinstance(lat, int):
        return lat
    env = dict(unrolled.valuation)
    env.update(inst.env)
    where = ", ".join(f"{k}={v}" for k, v in list(unrolled.valuation) + list(inst.env)) or "no parameters"
    try:
        value = eval_expr(lat, env)
    except EvalError as err:
        raise EvalError(f"{err.message} at {where}", err.loc) from None
    if value < 0:
        raise EvalError(f"the latency of op '{inst.op.name}' evaluates to {value} at {where}; "
                        "a latency is non-negative", lat.loc or inst.op.loc)
    return value


def tracked_loops(program: Program) -> frozenset:
    """Loop variables whose iteration count some threshold reads (`iters(v)`). On a
    program with its registers inlined (`Unrolled.program`), that includes the `iters`
    that the headers of the registers a threshold reads name."""
    return frozenset(node.var for stmt in walk_stmts(program.body) if isinstance(stmt, Op)
                     for wait in stmt.waits for node in walk_expr(wait.threshold) if isinstance(node, Iters))


def count_bodies(program: Program) -> dict[str, int]:
    """Per op counted on a tracked engine (`count(F)` in some threshold; a DMA op counts
    on its queue), by name: the number of the statement body that directly holds it
    (0: the top level; then loop bodies and `if` branches in source order)."""
    tracked = set(counted_engines(program))
    out: dict[str, int] = {}
    bodies = [0]

    def visit(body, number: int) -> None:
        for stmt in body:
            match stmt:
                case Op():
                    if (stmt.queue or stmt.engine) in tracked:
                        out[stmt.name] = number
                case For():
                    bodies[0] += 1
                    visit(stmt.body, bodies[0])
                case If():
                    for branch in (stmt.then, stmt.else_):
                        bodies[0] += 1
                        visit(branch, bodies[0])

    visit(program.body, 0)
    return out


def register_readers(program: Program) -> dict[str, frozenset[str]]:
    """Per loop register of `program`, the engines that keep it: an engine reads a register
    when one of its ops (a DMA op: its triggering engine) has a wait threshold naming it,
    or when it reads a register whose init or step names it (transitively). A register no
    engine reads is absent."""
    registers = registers_of(program)
    if not registers:
        return {}

    def names(node) -> set[str]:
        return {n.name for n in walk_expr(node) if isinstance(n, Var) and n.name in registers}

    feeds = {name: names(reg.init) | (names(reg.step) if reg.step is not None else set())
             for name, (_, reg) in registers.items()}
    readers: dict[str, set[str]] = {}
    for stmt in walk_stmts(program.body):
        if not isinstance(stmt, Op):
            continue
        todo = [n for w in stmt.waits for n in names(w.threshold)]
        while todo:
            name = todo.pop()
            engines = readers.setdefault(name, set())
            if stmt.engine not in engines:
                engines.add(stmt.engine)
                todo.extend(feeds[name])
    return {name: frozenset(engines) for name, engines in readers.items()}


_SYNC_COST = {"waitflag": "flag_wait_cycles", "pop": "token_pop_cycles", "setflag": "flag_set_cycles",
              "push": "token_push_cycles"}


def _sync_costs(inst, costs: Profile, kinds) -> float:
    return sum(getattr(costs, _SYNC_COST[kind]) for kind, _, _ in inst.syncs if kind in kinds)


@attrs.frozen
class Slice:
    engine: int
    kind: str  # "op" | "stall" | "overhead" | "barrier"
    start: float
    end: float
    name: str


@attrs.frozen
class Timeline:
    cycles: float
    labels: tuple[Label, ...]  # the machine trace taken, in time order
    slices: tuple[Slice, ...]
    busy: tuple[float, ...]  # per engine: cycles running instances
    stall: tuple[float, ...]  # per engine: cycles blocked by waits or barriers (wake latency included)
    overhead: tuple[float, ...]  # per engine: cycles evaluating waits and tracking loop counts


def simulate(unrolled: Unrolled, profile: Profile, oracle: bool = False) -> Timeline:
    """Run the counter program (or, with oracle, the reference) as early as it may."""
    machine = Reference(unrolled) if oracle else Counter(unrolled)
    costs = ZERO if oracle else profile
    engines = len(unrolled.program.engines)
    instances = unrolled.instances
    minimum = profile.min_instruction_cycles
    # Per instance: cost of evaluating its waits, and of tracking loop counts since the
    # engine's previous instance.
    # A trigger costs the profile's trigger time (also for the oracle: it is work, not sync).
    latency = [profile.dma_trigger_cycles if inst.is_trigger else instance_latency(unrolled, inst)
               for inst in instances]
    evaluate = [0.0] * len(instances)
    tracking = [0.0] * len(instances)
    signal = [0.0] * len(instances)  # after completion: setflag and push costs
    if not oracle:
        tracked = tracked_loops(unrolled.program)
        seen = [dict() for _ in range(engines)]
        # loop var -> iteration starts so far (program order); count_key(F) -> executions
        # of bodies holding F-ops so far (a body execution: its number, the loop values)
        iterations: dict = {}
        previous_env: dict = {}
        bodies = count_bodies(unrolled.program)
        executions: set = set()
        # A wait's threshold is charged as written: the source op (same name) reads registers.
        source_ops = ({} if unrolled.source is unrolled.program else
                      {s.name: s for s in walk_stmts(unrolled.source.body) if isinstance(s, Op)})
        wait_costs: dict[str, float] = {}  # op name -> its waits' evaluation (peer clauses apart)
        registers = _RegisterCosts(unrolled, costs)
        for inst in instances:
            env = dict(inst.env)
            moved = False  # (a loop starts an iteration where its index or an enclosing one moved)
            for var, value in env.items():
                moved = moved or previous_env.get(var) != value
                if var in tracked and moved:
                    iterations[var] = iterations.get(var, 0) + 1
            previous_env = env
            if registers.loops:
                registers.advance(inst)
            body = bodies.get(inst.op.name)
            if body is not None and inst.trigger < 0 and (body, inst.env) not in executions:
                # a DMA op's execution is its trigger's (its transfer, on the queue, comes later)
                executions.add((body, inst.env))
                key = count_key(inst.op.queue or unrolled.program.engines[inst.engine])
                iterations[key] = iterations.get(key, 0) + 1
            if inst.trigger >= 0:  # a transfer: the queue neither evaluates waits nor tracks loops,
                signal[inst.index] = _sync_costs(inst, costs, ("setflag", "push"))  # but signals (docs/peers.md 9)
                continue
            mine = seen[inst.engine]
            started = sum(iterations[v] - mine.get(v, 0) for v in iterations)
            mine.update(iterations)
            tracking[inst.index] = started * costs.iteration_cycles
            if registers.loops:
                tracking[inst.index] += registers.charge(inst.engine)
            waits = wait_costs.get(inst.op.name)
            if waits is None:
                op = source_ops.get(inst.op.name, inst.op)
                waits = wait_costs[inst.op.name] = sum(
                    costs.wait_cycles + costs.wait_op_cycles * arithmetic_ops(w.threshold) for w in op.waits)
            evaluate[inst.index] = waits + _sync_costs(inst, costs, ("waitflag", "pop"))
            signal[inst.index] = _sync_costs(inst, costs, ("setflag", "push"))

    state = machine.initial()
    now = 0.0
    ready = [0.0] * engines  # when each idle engine may next try to issue (overheads paid)
    blocked_since = [None] * engines  # idle engines whose issue the machine refused
    completions: list = []  # heap of (time, engine, instance)
    trace, slices = [], []
    busy, stall, overhead = [0.0] * engines, [0.0] * engines, [0.0] * engines
    paid = [False] * engines  # overheads of the engine's next instance already charged

    def position(st, e):
        return st[e] >> 1

    while not machine.final(state):
        progressed = True
        while progressed:  # issue everything issuable at `now`, engine order
            progressed = False
            enabled = {l.instance for l in machine.enabled(state) if l.kind == ISSUE}
            for e in range(engines):
                stream = machine.streams[e]
                if state[e] & 1 or position(state, e) >= len(stream):
                    continue
                y = stream[position(state, e)]
                if y < 0:
                    continue  # standing at a barrier
                if not paid[e]:
                    cost = evaluate[y] + tracking[y]
                    if cost:
                        slices.append(Slice(e, "overhead", ready[e], ready[e] + cost, "sync overhead"))
                    overhead[e] += cost
                    ready[e] += cost
                    paid[e] = True
                    if ready[e] > now:
                        heapq.heappush(completions, (ready[e], -1, e))  # retry once the overhead is paid
                if ready[e] > now:
                    continue
                if y in enabled:
                    start = now
                    if blocked_since[e] is not None:
                        start = now + costs.wake_cycles
                        stall[e] += start - blocked_since[e]
                        slices.append(Slice(e, "stall", blocked_since[e], start, "stall"))
                        blocked_since[e] = None
                    if start > now:  # woken: issue after the wake latency
                        ready[e] = start
                        blocked_since[e] = None
                        heapq.heappush(completions, (start, -1, e))  # a wake-up event
                        continue
                    state = machine.step(state, Label(ISSUE, y))
                    trace.append(Label(ISSUE, y))
                    end = start + max(latency[y], minimum)
                    busy[e] += end - start
                    slices.append(Slice(e, "op", start, end, instances[y].describe()))
                    if signal[y]:  # the set / push instructions run before the completion is seen
                        slices.append(Slice(e, "overhead", end, end + signal[y], "sync signal"))
                        overhead[e] += signal[y]
                        end += signal[y]
                    heapq.heappush(completions, (end, y, e))
                    paid[e] = False
                    progressed = True
                    enabled = {l.instance for l in machine.enabled(state) if l.kind == ISSUE}
                elif blocked_since[e] is None:
                    blocked_since[e] = now
        if machine.final(state):
            break
        if not completions:
            stuck = [unrolled.program.engines[e] for e in range(engines) if not machine.final(state)
                     and position(state, e) < len(machine.streams[e])]
            raise Deadlock(f"the program deadlocks at cycle {now:.0f}: {', '.join(stuck)} cannot go on "
                           f"(`syncproof verify` shows why)")
        now, y, e = heapq.heappop(completions)
        if y < 0:
            continue  # a wake-up: retry at `now`
        before = state
        state = machine.step(state, Label(COMPLETE, y))
        trace.append(Label(COMPLETE, y))
        if not oracle and machine.error(state):
            raise HardwareError(f"hardware error at cycle {now:.0f}: {machine.error(state)} "
                                f"(`syncproof verify` shows why)")
        ready[e] = max(ready[e], now)
        if not oracle:
            _barrier_pass(before, state, e, now, costs, ready, slices, stall, completions)
    cycles = max((s.end for s in slices if s.kind == "op"), default=0.0)
    return Timeline(cycles, tuple(trace), tuple(slices), tuple(busy), tuple(stall), tuple(overhead))


class _RegisterCosts:
    """The cycles each engine owes for keeping loop registers (module docstring): per
    register, the cycles of its entries and back-edges so far in program order; per
    engine, the part of them it has paid."""

    def __init__(self, unrolled: Unrolled, costs: Profile):
        source = unrolled.source
        readers = register_readers(source)
        self.valuation = dict(unrolled.valuation)
        # loop var -> (its loop, ((register, cycles per entry, cycles per back-edge), ...)),
        # registers some engine keeps only
        self.loops: dict[str, tuple[For, tuple]] = {}
        for name, (loop, reg) in registers_of(source).items():
            if name in readers:
                entry, back = register_ops(reg)
                kept = self.loops.get(loop.var, (loop, ()))[1]
                self.loops[loop.var] = (loop, kept + ((name, costs.wait_op_cycles * entry,
                                                       costs.wait_op_cycles * back),))
        self.reads = [tuple(name for name in readers if engine in readers[name]) for engine in source.engines]
        self.spent = dict.fromkeys(readers, 0.0)  # per register: its cycles so far
        self.paid = [dict.fromkeys(names, 0.0) for names in self.reads]
        self.last: dict[str, tuple] = {}  # loop var -> (enclosing loops' values, v) at its last instance

    def advance(self, inst) -> None:
        """Count the entries and back-edges that `inst` shows (program order)."""
        for depth, (var, value) in enumerate(inst.env):
            kept = self.loops.get(var)
            if kept is None:
                continue
            loop, registers = kept
            outer = inst.env[:depth]
            last = self.last.get(var)
            if last is not None and last[0] == outer:
                back_edges, entries = value - last[1], 0
            else:  # a new entry, and the back-edges before its first instance
                env = dict(self.valuation)
                env.update(outer)
                back_edges, entries = value - eval_expr(loop.lo, env), 1
            self.last[var] = (outer, value)
            for name, entry, back in registers:
                self.spent[name] += entries * entry + back_edges * back

    def charge(self, engine: int) -> float:
        """What `engine` owes for its registers since its previous instance (and marks it paid)."""
        paid, due = self.paid[engine], 0.0
        for name in self.reads[engine]:
            due += self.spent[name] - paid[name]
            paid[name] = self.spent[name]
        return due


def _barrier_pass(before, after, engine, now, costs, ready, slices, stall, completions) -> None:
    """Engines the completion released from a barrier resume `barrier_cycles` later."""
    passed = [e for e in range(len(ready)) if (after[e] >> 1) > (before[e] >> 1) + (1 if e == engine else 0)]
    if not passed:
        return
    release = now + costs.barrier_cycles
    for e in passed:
        if ready[e] < release:
            slices.append(Slice(e, "barrier", max(ready[e], 0.0), release, "barrier"))
            stall[e] += release - max(ready[e], 0.0)
            ready[e] = release
    if costs.barrier_cycles:
        heapq.heappush(completions, (release, -1, passed[0]))
