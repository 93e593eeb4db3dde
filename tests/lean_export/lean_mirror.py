"""The executable definitions of lean_export/lean/Syncproof/{Semantics,Check}.lean,
transliterated into Python definition by definition, under the Lean names, and run on
the program term the export emitted (read back by lean_terms.py, never taken from
semantics/ir.py).

No Lean toolchain runs here, so this is the gate for the Lean definitions: the tests
(test_lean_mirror.py) check that on every exported kernel it enables the same labels
and reaches the same successor states as semantics/machines.py in every reachable state
within the bounds, and that every `native_decide` claim of the export evaluates as
claimed. `LEAN_SOURCE` records a digest of each mirrored Lean definition's text: editing
a definition in the library without reviewing its transliteration here fails the tests.
Natural-number subtraction does not occur in the mirrored definitions; Lean's `Int`
is Python's int, `List` a list, `Option` None or a value.
"""

from __future__ import annotations

import attrs

# ------------------------------------------------------------------ helpers


def nth_opt(l, n):  # nth?
    return l[n] if 0 <= n < len(l) else None


def nthD(l, n, d):
    x = nth_opt(l, n)
    return d if x is None else x


def lookup_opt(pairs, x):  # lookup?
    for k, v in pairs:
        if k == x:
            return v
    return None


def bump(s, n):
    return tuple(a + 1 if i == n else a for i, a in enumerate(s))


# -------------------------------------------------------------- expressions


def ediv(x, y):  # Int.ediv: remainder in [0, |y|); 0 for y = 0
    if y == 0:
        return 0
    q = x // y if y > 0 else -(x // -y)
    return q + (1 if y < 0 else -1) if x - y * q < 0 else q


def floorDiv(x, y):
    return ediv(-x, -y) if y < 0 else ediv(x, y)


def floorMod(x, y):
    return x - y * floorDiv(x, y)


_CMP = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
        "le": lambda x, y: x <= y, "gt": lambda x, y: y < x, "ge": lambda x, y: y <= x}
_ARITH = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "min": lambda x, y: x if x <= y else y, "max": lambda x, y: y if x <= y else x}


def countKey(f):
    return "count(" + f + ")"


def evalExpr(env, iters, e):
    """None is a run-time error."""
    def go(a):
        return evalExpr(env, iters, a)

    match e:
        case ("const", n):
            return n
        case ("var", x):
            return lookup_opt(env, x)
        case ("iters", x):
            if iters is None:
                return None
            k = lookup_opt(iters, x)
            return 0 if k is None else k
        case ("count", f):
            if iters is None:
                return None
            k = lookup_opt(iters, countKey(f))
            return 0 if k is None else k
        case (("add" | "sub" | "mul" | "min" | "max") as op, a, b):
            x, y = go(a), go(b)
            return None if x is None or y is None else _ARITH[op](x, y)
        case (("fdiv" | "fmod") as op, a, b):
            x, y = go(a), go(b)
            if x is None or y is None or y == 0:
                return None
            return floorDiv(x, y) if op == "fdiv" else floorMod(x, y)
        case ("neg", a):
            x = go(a)
            return None if x is None else -x
        case ("ite", c, a, b):
            v = go(c)
            return None if v is None else (go(b) if v == 0 else go(a))
        case ("cmp", (op,), a, b):
            x, y = go(a), go(b)
            return None if x is None or y is None else int(_CMP[op](x, y))
        case ("and", a, b):
            x = go(a)
            if x is None:
                return None
            if x == 0:
                return 0
            y = go(b)
            return None if y is None else int(y != 0)
        case ("or", a, b):
            x = go(a)
            if x is None:
                return None
            if x == 0:
                y = go(b)
                return None if y is None else int(y != 0)
            return 1
        case ("not", a):
            x = go(a)
            return None if x is None else int(x == 0)
    raise ValueError(f"not an Expr term: {e!r}")


# ---------------------------------------------------------------- unrolling

OP_DEFAULTS = {"reads": [], "writes": [], "lat": ("const", 1), "waits": [], "via": None, "replica": None}


def some(value):
    """`Option` field as written (`some x` / `none`)."""
    return None if value is None else value[1]


@attrs.frozen
class Inst:
    op: str
    env: tuple
    engine: int
    localIdx: int
    accesses: tuple  # ((buffer, ((lo, hi), ...)), written)
    waits: tuple  # (engine, threshold)
    replica: str | None = None
    counted: bool = True
    trigger: int | None = None
    transfer: int | None = None


@attrs.frozen
class Unrolled:
    insts: tuple
    streams: tuple  # per engine: ("inst", i) or ("barrier",)
    incs: tuple
    ok: bool


def indexOf(names, x):
    for n, name in enumerate(names):
        if name == x:
            return n
    return len(names)


def block(items):
    """`block`: the list as the tree `seq`/`skip`."""
    out = ("skip",)
    for stmt in reversed(items):
        out = ("seq", stmt, out)
    return out


def unroll(p: dict, v):
    """`unroll`, with `UState` as a dict updated in place (the Lean state is threaded)."""
    engines = p["engines"]
    st = {"env": [(x, lookup_opt(v, x) or 0) for x, _ in p["params"]], "loopEnv": [], "iters": [],
          "insts": [], "streams": [[] for _ in engines], "locals": [0 for _ in engines], "ok": True}

    def evalOr0(iters, e):
        r = evalExpr(st["env"], iters, e)
        return (0, False) if r is None else (r, True)

    def evalIndex(index):
        match index:
            case ("elem", e):
                r = evalOr0(None, e)
                return (r[0], r[0] + 1), r[1]
            case ("range", lo, hi):
                a, b = evalOr0(None, lo), evalOr0(None, hi)
                return (a[0], b[0]), a[1] and b[1]
        raise ValueError(index)

    def addInst(o):
        o = {**OP_DEFAULTS, **o}
        e = indexOf(engines, o["engine"])
        accesses, okA = [], True
        for (buffer, indices), w in [(a, False) for a in o["reads"]] + [(a, True) for a in o["writes"]]:
            vals = [evalIndex(i) for i in indices]
            accesses.append(((buffer, tuple(x for x, _ in vals)), w))
            okA = okA and all(ok for _, ok in vals)
        tracked = [(countKey(nthD(engines, k, "")), nthD(st["locals"], k, 0)) for k in range(len(engines))] \
            + list(st["iters"])
        ws = [(indexOf(engines, f), evalOr0(tracked, t)) for f, t in o["waits"]]
        waits = tuple((f, t) for f, (t, _) in ws)
        okW = all(ok and f < len(engines) for f, (_, ok) in ws)
        n = len(st["insts"])
        replica, via = some(o["replica"]), some(o["via"])
        if via is None:
            st["insts"].append(Inst(o["name"], tuple(st["loopEnv"]), e, nthD(st["locals"], e, 0),
                                    tuple(accesses), waits, replica))
            appendAt(e, ("inst", n))
            st["locals"] = list(bump(st["locals"], e))
            st["ok"] = st["ok"] and okA and okW and e < len(engines)
        else:
            qe = indexOf(engines, via)
            st["insts"].append(Inst(o["name"], tuple(st["loopEnv"]), e, 0, (), waits, replica,
                                    counted=False, transfer=n + 1))
            st["insts"].append(Inst(o["name"], tuple(st["loopEnv"]), qe, nthD(st["locals"], qe, 0),
                                    tuple(accesses), (), replica, trigger=n))
            appendAt(e, ("inst", n))
            appendAt(qe, ("inst", n + 1))
            st["locals"] = list(bump(st["locals"], qe))
            st["ok"] = st["ok"] and okA and okW and e < len(engines) and qe < len(engines)

    def appendAt(k, item):
        if k < len(st["streams"]):
            st["streams"][k].append(item)

    def unrollStmt(s):
        match s:
            case ("skip",):
                pass
            case ("seq", a, b):
                unrollStmt(a)
                unrollStmt(b)
            case ("block", items):  # `block [...]` elaborates to its seq/skip tree
                unrollStmt(block(items))
            case ("op", o):
                addInst(o)
            case ("barrier",):
                for stream in st["streams"]:
                    stream.append(("barrier",))
            case ("cond", c, t, e):
                r = evalExpr(st["env"], None, c)
                if r is None:
                    st["ok"] = False
                else:
                    unrollStmt(e if r == 0 else t)
            case ("loop", x, lo, hi, body):
                a, b = evalExpr(st["env"], None, lo), evalExpr(st["env"], None, hi)
                if a is None or b is None:
                    st["ok"] = False
                    return
                for k in range(max(b - a, 0)):  # List.range (b - a).toNat
                    val = a + k
                    k_iters = lookup_opt(st["iters"], x)
                    st["env"] = [(x, val)] + st["env"]
                    st["loopEnv"] = [(x, val)] + st["loopEnv"]
                    st["iters"] = [(x, (0 if k_iters is None else k_iters) + 1)] + st["iters"]
                    unrollStmt(body)
                    st["env"], st["loopEnv"] = st["env"][1:], st["loopEnv"][1:]
            case _:
                raise ValueError(f"not a Stmt term: {s!r}")

    unrollStmt(p["body"])
    paramsGiven = all(lookup_opt(v, x) is not None and lower <= lookup_opt(v, x) for x, lower in p["params"])
    incs = tuple(incrementOf(p, e) for e in engines)
    return Unrolled(tuple(st["insts"]), tuple(tuple(s) for s in st["streams"]), incs, st["ok"] and paramsGiven)


def incrementOf(p, e):
    k = lookup_opt(p.get("queues", []), e)
    return 1 if k is None else k


# The mirrored Lean declarations and a digest of each one's text (lean_terms.library_digests).
# A digest that no longer matches means the Lean definition changed: review its
# transliteration above or in lean_machines.py, then record the new digest.
LEAN_SOURCE = {
    "Syntax.CmpOp": "54bd0bf68a9c",
    "Syntax.Expr": "a71e8a832688",
    "Syntax.Index": "d1cdbb095f7c",
    "Syntax.Access": "7d9f93f9080c",
    "Syntax.Wait": "cf5c83e4a094",
    "Syntax.Op": "48d7e2ceee38",
    "Syntax.Stmt": "e64b47da1c03",
    "Syntax.block": "64175e050956",
    "Syntax.Program": "b6d2e939f63b",
    "Syntax.Valuation": "dd059982d5f3",
    "Semantics.nth?": "ba4fd6f54fb5",
    "Semantics.nthD": "eab5f573a7cb",
    "Semantics.lookup?": "73a2e6686abd",
    "Semantics.bump": "96940690cd1f",
    "Semantics.floorDiv": "affeac27ee94",
    "Semantics.floorMod": "22ff9a5371fa",
    "Semantics.cmpOp": "01190dd7d4a5",
    "Semantics.lift2": "e9db26fd1220",
    "Semantics.ofBool": "d0e11db60010",
    "Semantics.countKey": "8b321de5b174",
    "Semantics.evalExpr": "b0fecfe65ebe",
    "Semantics.Box": "6e58e6976234",
    "Semantics.Inst": "4f1030c54b28",
    "Semantics.Item": "51c283efd48d",
    "Semantics.Unrolled": "d464e8520b52",
    "Semantics.UState": "703a00594aa0",
    "Semantics.indexOf": "7285ed38afd3",
    "Semantics.evalOr0": "f265c5e7d957",
    "Semantics.evalIndex": "99ec80cfc4a2",
    "Semantics.appendAt": "3ef6bc368ee6",
    "Semantics.tracked": "dd3eaa628068",
    "Semantics.addInst": "0b49a8474c72",
    "Semantics.bumpIters": "dabc492376e5",
    "Semantics.unrollStmt": "b9296f90cd8c",
    "Semantics.paramsGiven": "a13ea5fe9870",
    "Semantics.incrementOf": "ba18232f52b9",
    "Semantics.unroll": "c3dc3e02943f",
    "Semantics.overlaps": "f6a9b0436c62",
    "Semantics.conflict": "484aec0aa126",
    "Semantics.sameReplica": "b30e790f977a",
    "Semantics.dependsOn": "f0e0d0826a2e",
    "Semantics.tmin": "cbb38efbad47",
    "Semantics.engineCount": "5cadddf1bf38",
    "Semantics.needTable": "5f10db11bf09",
    "Semantics.Kind": "6e5f5fb14b32",
    "Semantics.Label": "b0c1eca88e27",
    "Semantics.engineOf": "d7463f0cfac0",
    "Semantics.countedInst": "fc0d84615868",
    "Semantics.guarded": "240dda6e1679",
    "Semantics.triggerOf": "7c97a1951951",
    "Semantics.refStream": "a5c27eb9e467",
    "Semantics.completedRef": "bf72995f79f1",
    "Semantics.countedDone": "c5cf2a453c3d",
    "Semantics.triggerDoneRef": "60d382eb3178",
    "Semantics.producersDone": "8061c5f311f0",
    "Semantics.RefStep": "95be6f0a9c83",
    "Semantics.refInit": "168a4e89c7a5",
    "Semantics.needOf": "51d6f17b5ac2",
    "Semantics.refEnabled": "782d5450eb8a",
    "Semantics.refEnabledSpec": "d2e5840c2775",
    "Semantics.refStepFn": "3bb23b229c17",
    "Semantics.countStep": "3a4a80922779",
    "Semantics.since": "828effe7d9a9",
    "Semantics.counterValue": "4c54a53b3605",
    "Semantics.instWaits": "a4ef956eee64",
    "Semantics.completedCtr": "5398bbd04f2c",
    "Semantics.triggerDoneCtr": "9f0b2e2cd9b7",
    "Semantics.allAtBarrier": "62f0ea4aa495",
    "Semantics.passBarriersFuel": "c63ea4529c23",
    "Semantics.passBarriers": "45679f8353b8",
    "Semantics.CtrStep": "b50816523628",
    "Semantics.ctrInit": "0d5ecf64b46b",
    "Semantics.ctrEnabled": "2e6696c5055c",
    "Semantics.ctrStepFn": "a8dfee7e29fc",
    "Semantics.int32Min": "983f0a3e89f3",
    "Semantics.int32Max": "d9a48770d261",
    "Semantics.maxCounter": "04e988f8777d",
    "Semantics.inInt32Range": "0b3f72ab40b2",
    "Semantics.refEnabledSpec_iff": "7e0fb04bf381",
    "Semantics.ctrEnabled_iff": "e83aa3d403d6",
    "Check.sameLabels": "4e6d468fba90",
    "Check.PState": "d20f1eb5ef28",
    "Check.seen": "9b10f6ed8558",
    "Check.stateOk": "2d2899c681a0",
    "Check.explore": "0b05691d596b",
    "Check.fuelFor": "241cc980886b",
    "Check.check": "1e633b718a5b",
    "Check.check_sound": "f5d6efb6b029",
}
