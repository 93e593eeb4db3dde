"""How far isl's parametric lexicographic maximum reaches on the planner's first question:
for each consumer op y and producer engine F, the last F-instance (in program order)
before y's instance that conflicts with it, as a function of the parameters and y's loop
indices. Per kernel: the (consumer, engine) pairs it answers (affine: loop bounds, guards
and indices built from loop indices, parameters, constants, `+ - *const //const %const`,
min/max), those it cannot (and why), and the seconds it took.

    pip install islpy   # not a dependency of syncproof: this is a measurement
    python bench/lexmax_probe.py [FILE ...]

Without FILEs, every .sync kernel of kernels/. Instances are placed in program order by
the usual 2d+1 schedule (a statement's position in its body, then the loop index, per
level; an `if` adds its position and 0 for `then`, 1 for `else`), padded with zeros; a
union over the producer ops of F, restricted to schedules before y's, goes to `lexmax`.
Only the instance is computed: counting the F-instances up to it (isl's wheel has no
Barvinok) and the redundancy of waits are not.
"""

import glob
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import islpy as isl  # noqa: E402
from semantics.ir import BinOp, Const, Var, Min, Max, Neg, Compare, And, Or, Not, For, If, Op, Range
from syncproof import load


class NonAffine(Exception):
    pass


def ex(e, params):
    match e:
        case Const(value=v):
            return str(v)
        case Var(name=n):
            return n
        case Neg(operand=a):
            return f"(-{ex(a, params)})"
        case Min(left=a, right=b):
            return f"min({ex(a, params)}, {ex(b, params)})"
        case Max(left=a, right=b):
            return f"max({ex(a, params)}, {ex(b, params)})"
        case BinOp(op=op, left=a, right=b):
            if op in "+-":
                return f"({ex(a, params)} {op} {ex(b, params)})"
            if op == "*":
                if isinstance(a, Const) or isinstance(b, Const):
                    return f"({ex(a, params)} * {ex(b, params)})"
                raise NonAffine("product")
            if op == "//":
                if isinstance(b, Const):
                    return f"floor(({ex(a, params)}) / {b.value})"
                raise NonAffine("division by a non-constant")
            if op == "%":
                if isinstance(b, Const):
                    return f"(({ex(a, params)}) mod {b.value})"
                raise NonAffine("mod by a non-constant")
        case _:
            raise NonAffine(type(e).__name__)
    raise NonAffine(str(e))


def cond(c, params):
    match c:
        case Compare(op=op, left=a, right=b):
            op = {"==": "=", "!=": "!="}.get(op, op)
            if op == "!=":
                return f"({ex(a, params)} < {ex(b, params)} or {ex(a, params)} > {ex(b, params)})"
            return f"({ex(a, params)} {op} {ex(b, params)})"
        case And(left=a, right=b):
            return f"({cond(a, params)} and {cond(b, params)})"
        case Or(left=a, right=b):
            return f"({cond(a, params)} or {cond(b, params)})"
        case Not(operand=a):
            return f"(not {cond(a, params)})"
    raise NonAffine(type(c).__name__)


def sites(program):
    """op name -> (op, [(var, lo, hi)], [conds], schedule: list of position/var strings)"""
    out = {}

    def visit(body, loops, conds, sched):
        for pos, s in enumerate(body):
            match s:
                case Op():
                    out[s.name] = (s, loops, conds, sched + [str(pos)])
                case For(var=v, lo=lo, hi=hi, body=b):
                    visit(b, loops + [(v, lo, hi)], conds, sched + [str(pos), v])
                case If(cond=c, then=t, else_=e):
                    visit(t, loops, conds + [("then", c)], sched + [str(pos), "0"])
                    visit(e, loops, conds + [("else", c)], sched + [str(pos), "1"])

    visit(program.body, [], [], [])
    return out


def rename(text, names, suffix):
    return (
        re.sub(r"\b(" + "|".join(map(re.escape, names)) + r")\b", lambda m: m.group(1) + suffix, text)
        if names
        else text
    )


def domain(site, params, suffix):
    op, loops, conds, sched = site
    names = [v for v, _, _ in loops]
    parts = []
    for v, lo, hi in loops:
        parts.append(f"{ex(lo, params)} <= {v} < {ex(hi, params)}")
    for kind, c in conds:
        t = cond(c, params)
        parts.append(t if kind == "then" else f"not {t}")
    return rename(" and ".join(parts) or "true", names, suffix), [v + suffix for v in names]


def conflict(x, y, params, sx, sy):
    """the condition that some access pair of x and y (one writing) meets"""
    ox, oy = x[0], y[0]
    nx, ny = [v for v, _, _ in x[1]], [v for v, _, _ in y[1]]
    alts = []
    for ax, wx in [(a, False) for a in ox.reads] + [(a, True) for a in ox.writes]:
        for ay, wy in [(a, False) for a in oy.reads] + [(a, True) for a in oy.writes]:
            if ax.buffer != ay.buffer or not (wx or wy):
                continue
            if not ax.indices or not ay.indices:
                return "true"
            dims = []
            for ix, iy in zip(ax.indices, ay.indices):

                def bounds(i, names, suffix):
                    if isinstance(i, Range):
                        return rename(ex(i.lo, params), names, suffix), rename(ex(i.hi, params), names, suffix)
                    e = rename(ex(i, params), names, suffix)
                    return e, f"({e}) + 1"

                lx, hx = bounds(ix, nx, sx)
                ly, hy = bounds(iy, ny, sy)
                dims.append(f"({lx} < {hy} and {ly} < {hx})")
            alts.append("(" + " and ".join(dims) + ")")
    return " or ".join(alts) if alts else None


def pad(sched, n):
    return sched + ["0"] * (n - len(sched))


def probe(path):
    program = load(path)
    params = [p.name for p in program.params]
    ss = sites(program)
    width = max(len(s[3]) for s in ss.values())
    P = "[" + ", ".join(params) + "]"
    lower = " and ".join(f"{p.name} >= {p.lower}" for p in program.params) or "true"
    ok = bad = 0
    reasons = {}
    t0 = time.perf_counter()
    for yname, y in ss.items():
        for F in program.engines:
            if F == y[0].engine:
                continue
            try:
                ydom, yv = domain(y, params, "_y")
                ysched = rename(", ".join(pad(y[3], width)), [v for v, _, _ in y[1]], "_y")
                pieces = []
                for xname, x in ss.items():
                    if x[0].engine != F:
                        continue
                    c = conflict(x, y, params, "_x", "_y")
                    if c is None:
                        continue
                    xdom, xv = domain(x, params, "_x")
                    xsched = rename(", ".join(pad(x[3], width)), [v for v, _, _ in x[1]], "_x")
                    # x before y: lex less of schedules
                    ex_vars = ", ".join(xv)
                    body = f"({xdom}) and ({c}) and ({lower})"
                    ts = [f"t{k}" for k in range(width)]
                    eqs = " and ".join(f"{t} = {e}" for t, e in zip(ts, xsched.split(", ")))
                    inner = f"{eqs} and {body}"
                    text = f"{P} -> {{ [{', '.join(yv)}] -> [{', '.join(ts)}] : {ydom} and " + (
                        f"exists ({ex_vars} : {inner}) }}" if xv else f"{inner} }}"
                    )
                    m = isl.Map(text)
                    # keep only instances that precede y: s_x <<_lex s_y
                    ys = isl.Map(f"{P} -> {{ [{', '.join(yv)}] -> [{ysched}] }}")
                    pieces.append((m, ys))
                if not pieces:
                    ok += 1
                    continue
                union = None
                for m, ys in pieces:
                    # compose: {y -> s_x : s_x < s_y}
                    lt = isl.Map.lex_lt(m.get_space().range())  # s -> s' with s < s'
                    restricted = m.intersect(ys.apply_range(lt.reverse()))
                    union = restricted if union is None else union.union(restricted)
                union.lexmax()
                ok += 1
            except NonAffine as e:
                bad += 1
                reasons[str(e)] = reasons.get(str(e), 0) + 1
            except isl.Error as e:
                bad += 1
                reasons["isl: " + str(e)[:60]] = reasons.get("isl: " + str(e)[:60], 0) + 1
    return ok, bad, time.perf_counter() - t0, reasons


files = sys.argv[1:] or sorted(glob.glob(str(ROOT / "kernels" / "**" / "*.sync"), recursive=True))
tot = 0
for f in files:
    try:
        ok, bad, t, reasons = probe(f)
    except Exception as e:
        print(f"{f.split('kernels/')[-1]:50s} ERROR {type(e).__name__}: {str(e)[:100]}")
        continue
    tot += t
    print(f"{f.split('kernels/')[-1]:50s} affine {ok:3d} not {bad:3d} {t * 1000:7.1f} ms {reasons if reasons else ''}")
print("total", round(tot, 2), "s")
