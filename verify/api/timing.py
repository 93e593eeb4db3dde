"""`simulate`: a timed run of a kernel under a strategy (verify/timing/scheduler.py),
what `syncproof simulate` prints. The command line's `simulate` and `bench` time their
runs with `run` here."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from semantics.errors import UsageError
from semantics.ir import Program
from semantics.sequential import UnrollLimit, count_instances, unroll
from verify.timing.scheduler import Profile, Timeline, load_profile
from verify.timing.scheduler import simulate as simulate_unrolled

MAX_INSTANCES = 2_000_000  # per timed run: beyond this, memory and time run away


@attrs.frozen
class Simulation:
    """One timed run: `cycles` in total and, per engine, `busy` (running instances),
    `stall` (blocked by waits or barriers) and `overhead` (evaluating waits, tracking
    loop and engine counts, setting and advancing loop registers) cycles, at the valuation
    `param`, on `profile`. `timeline` is the
    scheduler's whole record (verify/timing/scheduler.py `Timeline`: the trace taken and
    the slices a Perfetto trace shows)."""

    strategy: str
    profile: Profile
    param: dict = attrs.field(converter=dict)
    engines: tuple[str, ...]
    timeline: Timeline

    @property
    def cycles(self) -> float:
        """Total cycles of the run."""
        return self.timeline.cycles

    @property
    def microseconds(self) -> float:
        """Total time of the run at the profile's clock."""
        return self.timeline.cycles / (1000 * self.profile.clock_ghz)

    @property
    def busy(self) -> dict[str, float]:
        """Per engine: cycles running instances."""
        return dict(zip(self.engines, self.timeline.busy))

    @property
    def stall(self) -> dict[str, float]:
        """Per engine: cycles blocked by waits or barriers."""
        return dict(zip(self.engines, self.timeline.stall))

    @property
    def overhead(self) -> dict[str, float]:
        """Per engine: cycles evaluating waits and tracking loop counts."""
        return dict(zip(self.engines, self.timeline.overhead))


def unroll_bounded(program: Program, values: Mapping[str, int]):
    """The run of `program` at `values`, refused (a UsageError) beyond MAX_INSTANCES
    instances before it is unrolled."""
    try:
        count_instances(program, values, MAX_INSTANCES)  # refuses a runaway size before unrolling it
        return unroll(program, values, limit=MAX_INSTANCES)
    except UnrollLimit:
        raise UsageError(f"the run has more than {MAX_INSTANCES:,} instances at "
                         f"{', '.join(f'{k}={v}' for k, v in values.items())}: give smaller --param values") from None


def run(program: Program, strategy: str, values: Mapping[str, int], profile: Profile, progress=None) -> Timeline:
    """Sync with `strategy` (or take the oracle) and simulate at `values`."""
    from algorithm.registry import get_strategy

    def say(text):
        if progress:
            progress(text)

    if strategy != "oracle":
        say(f"synchronizing with strategy {strategy}")
        program = get_strategy(strategy)(program).program
    say("unrolling at " + (", ".join(f"{k}={v}" for k, v in values.items()) or "no parameters"))
    unrolled = unroll_bounded(program, values)
    say(f"simulating {len(unrolled.instances):,} instances")
    return simulate_unrolled(unrolled, profile, oracle=strategy == "oracle")


def parameter_values(program: Program, params: Mapping[str, int] | None = None) -> dict[str, int]:
    """A value for every parameter, in declaration order: from `params`, else its
    default (`param N = 8`). An unknown name, a negative value or a parameter with
    neither is a UsageError."""
    params = dict(params or {})
    declared = [p.name for p in program.params]
    for name, value in params.items():
        if name not in declared:
            raise UsageError(f"the kernel has no parameter '{name}' (parameters: {', '.join(declared) or 'none'})")
        if not isinstance(value, int) or value < 0:
            raise UsageError(f"parameter {name}: {value!r} is not a non-negative integer")
    values = {}
    for p in program.params:
        if p.name in params:
            values[p.name] = params[p.name]
        elif p.default is None:
            raise UsageError(f"parameter {p.name} has no default: give it a value")
        else:
            values[p.name] = p.default
    return values


def simulate(program: Program, strategy: str = "threshold", params: Mapping[str, int] | None = None,
             profile: str | Profile = "trainium", progress=None) -> Simulation:
    """Time `program` synchronized by `strategy` (`oracle`: the reference semantics with
    free synchronization, the lower bound no strategy can beat) at the parameter values
    `params` (default: the kernel's defaults), on `profile` (a name, `trainium` or
    `snax`, a path to a .toml profile, or a `Profile`). A run that cannot finish (a
    deadlock) raises verify.timing.scheduler.Failure; bad arguments raise UsageError, a
    kernel that goes wrong at run time KernelError."""
    if strategy != "oracle":
        from algorithm.registry import get_strategy

        get_strategy(strategy)  # an unknown name is a UsageError before any work
    machine = profile if isinstance(profile, Profile) else load_profile(profile)
    values = parameter_values(program, params)
    timeline = run(program, strategy, values, machine, progress)
    return Simulation(strategy, machine, values, tuple(program.engines), timeline)
