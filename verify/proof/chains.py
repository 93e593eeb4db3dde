"""The chains of "completed before" steps the all-values proof's obligations use
(verify/proof/obligations.py `Prover` inherits them): an instance z completed before y
may issue (in order on y's engine, or y waits on z's engine past z), and z's own waits
(or z itself) cover an instance of another engine. Witnessed chains put candidate loop
indices in for z (quantifier-free), quantified chains bind them with one `ForAll` per
path; masked waits are covered by y's producers, y's earlier instances or one step
before a producer.

DMA ops (verify/proof/queues.py): an earlier item of u's stream that is a DMA op has
only *issued* when u may issue (its trigger completed, so its waits held), not
completed; its transfer has completed only when u waits on its queue past it. So a
DMA z covers through its waits (or through the trigger's own stream) once issued, and
through its queue (in-order completion, FIFO per queue) only once completed.
"""

from __future__ import annotations

import z3

from semantics.context import Site
from semantics.symbolic import conflicting_pairs

from verify.proof.queues import forces, home, is_dma, needed
from verify.proof.terms import last_candidates, witnesses

MAX_HOPS = 4  # instances in a chain of "completed before" steps
MAX_PATHS = 400  # chains per hop count
TWO_HOP_WITNESSES = 8  # candidate indices per instance of a witnessed two-step chain
LONG_WITNESSES = 4  # candidate indices per instance of a witnessed chain of three steps
MAX_WITNESSED_CHAINS = 3_000


class Chains:
    """Facts about chains, built through the prover's terms (`self.terms`, `self.domain`,
    `self.precedes`, `self.conflict`, `self.either`, `self.depth`, `self.options`)."""

    def _witnessed_chains(self, y: Site, iy: dict, x: Site | None, jx: dict | None, engine: str, lx,
                          two_hops: bool, narrow: bool = False) -> list:
        """Chains y <- z (one step) or y <- z1 <- z2 (two steps) whose instances are
        candidate indices: quantifier-free, so non-linear counts stay manageable. (A term
        that does not depend on a loop's candidate is built once, outside that loop.)
        `narrow`: one step, through the narrow witnesses only (a small query, tried first)."""
        out = []
        sites = list(self.terms.sites.values())
        covering = [z for z in sites if self._may_cover(z, engine)]
        anchors = [(y, iy)] + ([(x, jx)] if x is not None else [])
        waits_of_y: dict = {}  # y's threshold on an engine, per engine
        for z in ([] if two_hops else covering):
            if not self._may_precede(z, y):
                continue
            for kz in witnesses(self.terms, z, anchors, self.depth, self.options.max_witnesses, narrow=narrow):
                through = self._through(z, kz, y, iy, engine, lx, x, jx, waits_of_y)
                if through is not None:
                    out.append(z3.Not(z3.And(*self.domain(z, kz), *through)))
        for z1 in (sites if two_hops else []):
            if not self._may_precede(z1, y):
                continue
            for k1 in witnesses(self.terms, z1, [(y, iy)], self.depth, TWO_HOP_WITNESSES):
                first = [*self.domain(z1, k1), self._issued(z1, k1, y, iy, waits_of_y)]
                waits_of_z1: dict = {}
                for z2 in covering:
                    if not self._may_precede(z2, z1):
                        continue
                    for k2 in witnesses(self.terms, z2, [(z1, k1)] + anchors[1:], self.depth, TWO_HOP_WITNESSES):
                        if len(out) >= MAX_WITNESSED_CHAINS:
                            return out
                        where = self.domain(z2, k2)  # built before the step's terms, as they are used
                        through = self._through(z2, k2, z1, k1, engine, lx, x, jx, waits_of_z1)
                        if through is not None:
                            out.append(z3.Not(z3.And(*first, *where, *through)))
        return out

    def _long_witnessed_chains(self, y: Site, iy: dict, x: Site | None, jx: dict | None, engine: str, lx,
                               hops: int = 3) -> list:
        """Chains y <- z1 <- ... <- z_hops of `hops` steps whose instances are candidate
        indices (quantifier-free, as `_witnessed_chains`), through ops from which the
        steps left reach a cover (`_chain_ends`): a wait implied through the waits of
        three other ops, each instance named by the one after it (its own iteration,
        the iterations before, index solutions)."""
        out: list = []
        self._grow_chains(out, self._chain_ends(engine), y, y, iy, x, jx, engine, lx, [], {}, hops)
        return out

    def _grow_chains(self, out: list, ends: list, y: Site, u: Site, iu: dict, x: Site | None, jx: dict | None,
                     engine: str, lx, facts: list, waits: dict, left: int) -> None:
        """`_long_witnessed_chains` from u's instance, `left` steps to go. (A method, not a
        recursive closure: a closure that calls itself is a reference cycle, freed by the
        cyclic collector at a time that depends on the process's history, and the Z3
        terms it holds would then free their ids at that time too, which moves Z3's
        search.)"""
        for z in self.terms.sites.values():
            if z.op.name not in ends[left - 1] or not self._may_precede(z, u):
                continue
            anchors = [(u, iu)] + ([(x, jx)] if x is not None and u is not y else [])
            for kz in witnesses(self.terms, z, anchors, self.depth, LONG_WITNESSES):
                if len(out) >= MAX_WITNESSED_CHAINS:
                    return
                where = self.domain(z, kz)
                if left == 1:
                    through = self._through(z, kz, u, iu, engine, lx, x, jx, waits)
                    if through is not None:
                        out.append(z3.Not(z3.And(*facts, *where, *through)))
                    continue
                issued = self._issued(z, kz, u, iu, waits)
                if issued is not None:
                    self._grow_chains(out, ends, y, z, kz, x, jx, engine, lx, facts + [*where, issued], {}, left - 1)

    def _before(self, z: Site, kz: dict, u: Site, iu: dict, waits: dict | None = None):
        """z's instance (a DMA op's transfer) has completed when u's may issue: in-order
        on one engine, or u waits on z's engine (its queue) past z. None when u has no
        such wait. `waits`: u's thresholds at iu by engine, filled as they are built
        (one instance of u)."""
        if z.op.engine == u.op.engine and not is_dma(z.op):
            return self.precedes(z, kz, u, iu)
        engine = home(z.op)
        if waits is None:
            via = self.terms.threshold(u, engine, iu)
        else:
            if engine not in waits:
                waits[engine] = self.terms.threshold(u, engine, iu)
            via = waits[engine]
        return None if via is None else forces(via, self.terms.steps[engine], self.terms.local(z, engine, kz))

    def _issued(self, z: Site, kz: dict, u: Site, iu: dict, waits: dict | None = None):
        """z's waits held before u's may issue: `_before`, or for a DMA op also its
        trigger earlier in u's stream. None when neither."""
        if not is_dma(z.op):
            return self._before(z, kz, u, iu, waits)
        facts = [f for f in (self.precedes(z, kz, u, iu) if z.op.engine == u.op.engine else None,
                             self._before(z, kz, u, iu, waits)) if f is not None]
        return None if not facts else facts[0] if len(facts) == 1 else self.either(*facts)

    def _through(self, z: Site, kz: dict, u: Site, iu: dict, engine: str, lx, x: Site | None = None,
                 jx: dict | None = None, waits: dict | None = None) -> list | None:
        """Facts (a conjunction) saying z's instance, completed or issued before u's may
        issue, forces the instance of `engine` with local index lx (x's at jx) complete;
        None when z cannot. A DMA op covers through its waits once issued, through its
        queue only once completed."""
        if not is_dma(z.op):
            before, cover = self._before(z, kz, u, iu, waits), self._cover(z, kz, engine, lx, x, jx)
            return None if before is None or not cover else [before, self.either(*cover)]
        ways = []
        for reached, cover in ((self._issued(z, kz, u, iu, waits), self._cover(z, kz, engine, lx, x, jx, done=False)),
                               (self._before(z, kz, u, iu, waits), self._cover(z, kz, engine, lx, x, jx))):
            if reached is not None and cover:
                ways.append(z3.And(reached, self.either(*cover)))
        return [self.either(*ways)] if ways else None

    @staticmethod
    def _may_precede(z: Site, u: Site) -> bool:
        """`_issued(z, ..., u, ...)` is not None, told without building its terms."""
        return z.op.engine == u.op.engine or any(w.engine == home(z.op) for w in u.op.waits)

    @staticmethod
    def _may_cover(z: Site, engine: str) -> bool:
        """`_cover(z, ..., engine, ...)` is not empty, told without building its terms."""
        return z.op.engine == engine or home(z.op) == engine or any(w.engine == engine for w in z.op.waits)

    def _cover(self, z: Site, kz: dict, engine: str, lx, x: Site | None = None, jx: dict | None = None,
               done: bool = True) -> list:
        """z's issue forces the instance of `engine` with local index lx complete (x's
        instance at jx, when given). `done`: z's own instance has completed too (for a
        DMA op: its transfer, not only its trigger); otherwise only what its issue forces."""
        out = []
        tz = self.terms.threshold(z, engine, kz)
        if tz is not None:
            out.append(forces(tz, self.terms.steps[engine], lx))
        if is_dma(z.op) and z.op.engine == engine:
            # z's trigger has completed, so has every earlier item of its engine's stream.
            out.append(self.terms.local(z, engine, kz) >= lx + 1)
            if x is not None and home(x.op) == engine:
                out.append(self.precedes(x, jx, z, kz))
        if done and home(z.op) == engine:
            out.append(self.terms.local(z, engine, kz) >= lx)
            if x is not None and home(x.op) == engine:
                # The same fact without counts: an engine completes its instances in
                # program order (a queue its transfers, FIFO), so x's instance before
                # z's has completed when z's has (flash attention's `fexp` after `mupd`,
                # through the first `fmul`: the counts' comparison is a non-linear
                # inequality, the order is linear).
                out.append(self.precedes(x, jx, z, kz))
        return out

    def _chains(self, y: Site, iy: dict, engine: str, lx) -> list:
        """For every path y <- z1 <- ... <- zh (h <= MAX_HOPS) of "completed before"
        steps ending in a z that covers x: no instances make it so (one quantified
        formula per path, over the loop indices of its z's)."""
        out = []
        ends = self._chain_ends(engine)
        paths = [((y, iy, None),)]
        for hop in range(1, MAX_HOPS + 1):
            grown = []
            for path in paths:
                u, iu, _ = path[-1]
                for z in self.terms.sites.values():
                    if z.op.name not in ends[MAX_HOPS - hop]:
                        continue  # no path through z reaches a cover within the hops left
                    kz = self.terms.env(z, f"k{hop}")
                    issued = self._issued(z, kz, u, iu)  # enough for a step inside the path
                    if issued is None:
                        continue
                    grown.append(path + ((z, kz, issued),))
            paths = grown[:MAX_PATHS]
            for path in paths:
                z, kz, _ = path[-1]
                u, iu, _ = path[-2]
                through = self._through(z, kz, u, iu, engine, lx)
                if through is None:
                    continue
                facts, bound = [], []
                for zi, ki, issued in path[1:-1]:
                    facts += self.domain(zi, ki) + [issued]
                    bound += [ki[loop.var] for loop in zi.loops]
                facts += self.domain(z, kz)
                bound += [kz[loop.var] for loop in z.loops]
                body = z3.Not(z3.And(*facts, *through))
                out.append(z3.ForAll(bound, body) if bound else body)
        return out

    def _chain_ends(self, engine: str) -> list[set]:
        """ends[h]: the ops from which a path of at most h more steps reaches an op that
        may cover `engine` (`_may_cover`, `_may_precede`: static, no terms). Paths
        through other ops give no fact and would take places among the MAX_PATHS kept
        (in straight-line code they outnumber the paths that reach a cover)."""
        sites = list(self.terms.sites.values())
        ends = [{z.op.name for z in sites if self._may_cover(z, engine)}]
        for _ in range(MAX_HOPS):
            ends.append(ends[-1] | {z.op.name for z in sites
                                    if any(self._may_precede(w, z) for w in sites if w.op.name in ends[-1])})
        return ends

    def _masked(self, y: Site, iy: dict, wait, threshold) -> list:
        """A wait that no producer on its engine needs may still never block: when y's
        producers (any engine) and y's earlier instances on its own engine have
        completed, their waits (or a candidate instance before them) already force
        C[F] >= t. Negated facts, one per candidate."""
        t = self.terms
        engine = wait.engine
        out = []
        sources = [(x, jx) for x in t.sites.values() if home(x.op) != home(y.op) and conflicting_pairs(x.op, y.op)
                   for jx in last_candidates(t, x, y, iy, self.depth)]
        need = needed(threshold, t.steps[engine])  # the local index whose completion gives C[F] >= t
        completed = []  # per source: its instance is a producer of y's that has completed
        for x, jx in sources:
            done = [*self.domain(x, jx), self.precedes(x, jx, y, iy), self.conflict(x.op, jx, y.op, iy)]
            completed.append(done)
            out.append(z3.Not(z3.And(*done, self.either(*self._cover(x, jx, engine, need)))))
        for z in t.sites.values():  # y's engine: in-order, its earlier instances have completed
            if z.op.engine != y.op.engine:  # (a DMA op's trigger, not its transfer)
                continue
            for kz in witnesses(t, z, [(y, iy)], self.depth, self.options.max_witnesses):
                cover = self._cover(z, kz, engine, need, done=not is_dma(z.op))
                if cover:
                    out.append(z3.Not(z3.And(*self.domain(z, kz), self.precedes(z, kz, y, iy), self.either(*cover))))
        for (x, jx), done in zip(sources, completed):  # one step back from a producer
            waits_of_x: dict = {}
            for z in t.sites.values():
                if not (self._may_precede(z, x) and self._may_cover(z, engine)):
                    continue
                for kz in witnesses(t, z, [(x, jx)], self.depth, TWO_HOP_WITNESSES):
                    where = self.domain(z, kz)
                    through = self._through(z, kz, x, jx, engine, need, waits=waits_of_x)
                    if through is not None:
                        out.append(z3.Not(z3.And(*done, *where, *through)))
        return out
