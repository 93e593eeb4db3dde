"""A line-by-line Python transliteration of the executable part of the Lean library
(lean_export/lean/Syncproof/Semantics.lean and Check.lean), function by function, with
the same names. No Lean toolchain runs here, so this is how the tests check that every
`check p v = true/false := by native_decide` the export emits is what the Lean
definitions compute: the claims come from verify/engines/explicit.py, the mirror follows the
Lean text. Keep the two in step when either changes.
"""

from __future__ import annotations

from semantics.ir import (
    And, Barrier, BinOp, Compare, Const, For, If, IfExpr, Iters, Max, Min, Neg, Not, Op, Or,
    Program, Var,
)


def nth(l, n):
    return l[n] if 0 <= n < len(l) else None


def nth_d(l, n, d):
    x = nth(l, n)
    return d if x is None else x


def lookup(pairs, x):
    for k, v in pairs:
        if k == x:
            return v
    return None


def bump(s, n):
    return [a + 1 if i == n else a for i, a in enumerate(s)]


def ediv(x, y):  # Int.ediv: remainder in [0, |y|); 0 for y = 0
    if y == 0:
        return 0
    q = x // y if y > 0 else -(x // -y)
    return q + (1 if y < 0 else -1) if x - y * q < 0 else q


def floor_div(x, y):
    return ediv(-x, -y) if y < 0 else ediv(x, y)


def floor_mod(x, y):
    return x - y * floor_div(x, y)


_CMP = {"==": lambda x, y: x == y, "!=": lambda x, y: x != y, "<": lambda x, y: x < y,
        "<=": lambda x, y: x <= y, ">": lambda x, y: y < x, ">=": lambda x, y: y <= x}


def eval_expr(env, iters, e):
    """`evalExpr`: None is a run-time error."""
    def go(a):
        return eval_expr(env, iters, a)

    def lift2(f, a, b):
        x, y = go(a), go(b)
        return None if x is None or y is None else f(x, y)

    match e:
        case Const(value=n):
            return n
        case Var(name=x):
            return lookup(env, x)
        case Iters(var=x):
            return None if iters is None else (lookup(iters, x) or 0)
        case BinOp(op="//" | "%" as op, left=a, right=b):
            x, y = go(a), go(b)
            if x is None or y is None or y == 0:
                return None
            return floor_div(x, y) if op == "//" else floor_mod(x, y)
        case BinOp(op=op, left=a, right=b):
            return lift2({"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[op], a, b)
        case Neg(operand=a):
            x = go(a)
            return None if x is None else -x
        case Min(left=a, right=b):
            return lift2(lambda x, y: x if x <= y else y, a, b)
        case Max(left=a, right=b):
            return lift2(lambda x, y: y if x <= y else x, a, b)
        case IfExpr(cond=c, then=a, else_=b):
            v = go(c)
            return None if v is None else (go(b) if v == 0 else go(a))
        case Compare(op=op, left=a, right=b):
            return lift2(lambda x, y: int(_CMP[op](x, y)), a, b)
        case And(left=a, right=b):
            x = go(a)
            if x is None:
                return None
            if x == 0:
                return 0
            y = go(b)
            return None if y is None else int(y != 0)
        case Or(left=a, right=b):
            x = go(a)
            if x is None:
                return None
            if x != 0:
                return 1
            y = go(b)
            return None if y is None else int(y != 0)
        case Not(operand=a):
            x = go(a)
            return None if x is None else int(x == 0)
    raise TypeError(e)


def index_of(names, x):
    return names.index(x) if x in names else len(names)


def unroll(p: Program, v: list[tuple[str, int]]):
    """`unroll`: (insts, streams, ok); an inst is (engine, localIdx, accesses, waits)."""
    engines = list(p.engines)
    st = {"env": [(x.name, lookup(v, x.name) or 0) for x in p.params], "loopEnv": [], "iters": [],
          "insts": [], "streams": [[] for _ in engines], "locals": [0 for _ in engines], "ok": True}

    def ev(iters, e):
        r = eval_expr(st["env"], iters, e)
        return (0, False) if r is None else (r, True)

    def add_inst(o: Op):
        e = index_of(engines, o.engine)
        accesses, ok_a = [], True
        for a, w in [(a, False) for a in o.reads] + [(a, True) for a in o.writes]:
            vals = [ev(None, i) for i in a.indices]
            accesses.append(((a.buffer, tuple(x for x, _ in vals)), w))
            ok_a = ok_a and all(ok for _, ok in vals)
        ws = [(index_of(engines, w.engine), ev(list(st["iters"]), w.threshold)) for w in o.waits]
        n = len(st["insts"])
        st["insts"].append((e, nth_d(st["locals"], e, 0), accesses, [(f, t) for f, (t, _) in ws]))
        if e < len(st["streams"]):
            st["streams"][e].append(("inst", n))
        st["locals"] = bump(st["locals"], e)
        st["ok"] = st["ok"] and ok_a and e < len(engines) and all(ok and f < len(engines) for f, (_, ok) in ws)

    def run(body):
        for s in body:
            match s:
                case Op():
                    add_inst(s)
                case Barrier():
                    for stream in st["streams"]:
                        stream.append(("barrier",))
                case If(cond=c, then=t, else_=e):
                    r = eval_expr(st["env"], None, c)
                    if r is None:
                        st["ok"] = False
                    else:
                        run(e if r == 0 else t)
                case For(var=x, lo=lo, hi=hi, body=inner):
                    a, b = eval_expr(st["env"], None, lo), eval_expr(st["env"], None, hi)
                    if a is None or b is None:
                        st["ok"] = False
                        continue
                    for k in range(max(b - a, 0)):
                        val = a + k
                        st["env"] = [(x, val)] + st["env"]
                        st["loopEnv"] = [(x, val)] + st["loopEnv"]
                        st["iters"] = [(x, (lookup(st["iters"], x) or 0) + 1)] + st["iters"]
                        run(inner)
                        st["env"], st["loopEnv"] = st["env"][1:], st["loopEnv"][1:]

    run(p.body)
    given = all(lookup(v, x.name) is not None for x in p.params)
    return st["insts"], st["streams"], st["ok"] and given


def conflict(x, y):
    return any(e == e2 and (w or w2) for e, w in y[2] for e2, w2 in x[2])


def depends_on(insts, y, x):
    iy, ix = nth(insts, y), nth(insts, x)
    return iy is not None and ix is not None and x < y and ix[0] != iy[0] and conflict(ix, iy)


def tmin(insts, y, f):
    acc = 0
    for x in range(y):
        ix = nth(insts, x)
        if ix is not None and ix[0] == f and depends_on(insts, y, x):
            acc = max(acc, ix[1] + 1)
    return acc


def ref_stream(streams, e):
    return [it[1] for it in nth_d(streams, e, []) if it[0] == "inst"]


def completed_ref(insts, s, x):
    ix = nth(insts, x)
    return ix is not None and ix[1] < nth_d(s, ix[0], 0) // 2


def ref_enabled(insts, streams, need, s):
    out = []
    for e in range(len(streams)):
        v = nth_d(s, e, 0)
        y = nth(ref_stream(streams, e), v // 2)
        if y is None:
            continue
        if v % 2 == 1:
            out.append(("complete", y))
        elif all(nth_d(nth_d(need, y, []), f, 0) <= nth_d(s, f, 0) // 2 for f in range(len(streams))):
            out.append(("issue", y))
    return out


def ref_enabled_spec(insts, streams, s):
    out = []
    for e in range(len(streams)):
        v = nth_d(s, e, 0)
        y = nth(ref_stream(streams, e), v // 2)
        if y is None:
            continue
        if v % 2 == 1:
            out.append(("complete", y))
        elif all(not depends_on(insts, y, x) or completed_ref(insts, s, x) for x in range(y)):
            out.append(("issue", y))
    return out


def engine_of(insts, y):
    i = nth(insts, y)
    return 0 if i is None else i[0]


def since(stream, pos):
    c = 0
    for it in stream[:pos]:
        c = 0 if it[0] == "barrier" else c + 1
    return c


def counter_value(streams, s, f):
    return since(nth_d(streams, f, []), nth_d(s, f, 0) // 2)


def all_at_barrier(streams, s):
    return all(nth_d(s, e, 0) % 2 == 0 and nth(nth_d(streams, e, []), nth_d(s, e, 0) // 2) == ("barrier",)
               for e in range(len(streams)))


def pass_barriers(streams, s):
    for _ in range(len(nth_d(streams, 0, []))):
        if not all_at_barrier(streams, s):
            break
        s = [v + 2 for v in s]
    return s


def ctr_enabled(insts, streams, s):
    out = []
    for e in range(len(streams)):
        v = nth_d(s, e, 0)
        it = nth(nth_d(streams, e, []), v // 2)
        if it is None or it[0] != "inst":
            continue
        y = it[1]
        if v % 2 == 1:
            out.append(("complete", y))
        elif all(t <= counter_value(streams, s, f) for f, t in (nth(insts, y) or (0, 0, [], []))[3]):
            out.append(("issue", y))
    return out


def check(p: Program, v: list[tuple[str, int]]) -> bool:
    """`check`, with `explore`'s fuel and breadth-first order."""
    insts, streams, ok = unroll(p, v)
    need = [[tmin(insts, y, f) for f in range(len(streams))] for y in range(len(insts))]
    start = ([0 for _ in streams], pass_barriers(streams, [0 for _ in streams]))
    fuel = 1
    for stream in streams:
        fuel *= 2 * len(stream) + 1
    fuel += 1
    queue, visited = [start], [start]
    if not ok:
        return False
    while True:
        if fuel == 0:
            return False
        if not queue:
            return True
        fuel -= 1
        (r, c), queue = queue[0], queue[1:]
        labels = ref_enabled(insts, streams, need, r)
        ctr = ctr_enabled(insts, streams, c)
        if set(labels) != set(ctr) or set(labels) != set(ref_enabled_spec(insts, streams, r)):
            return False
        for label in ctr:
            e = engine_of(insts, label[1])
            nxt = (bump(r, e), pass_barriers(streams, bump(c, e)) if label[0] == "complete" else bump(c, e))
            if nxt not in visited:
                queue.append(nxt)
                visited.append(nxt)
