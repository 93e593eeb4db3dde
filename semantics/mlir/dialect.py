"""The `syncproof` dialect: barrier-free synchronization as MLIR ops (xdsl IRDL).

- `syncproof.wait`: `core` may start its next op once the completion counter of the
  core `counter` is at least `threshold`, a kernel-language expression (docs/language.md)
  over the op's operands, named in order by `names` (space-separated), parameters of the
  imported program, `iters(v)`, the iterations started so far of the `scf.for`
  marked `syncproof.loop = "v"`, and `count(C)`, the ops of core C before this one in
  program order.
- `syncproof.signal`: `core` increments its completion counter once the op before it
  has completed (a TCDM atomic add on SNAX).

Both are plain attributes (not properties), so the generic form reads
`"syncproof.wait"(%iv) {core = "COMPUTE", counter = "DM", threshold = "iv // 16 + 1", names = "iv"}`.
The verifier parses the threshold: a wait whose expression is not kernel language, or
whose `names` do not match its operands, is rejected when the IR is parsed or verified.
SNAX has no op for either (its only synchronization is the cluster barrier,
`snax.cluster_sync_op`), so they are ops of their own (docs/snax.md says why).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, attr_def, irdl_op_definition, opt_attr_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from semantics.errors import KernelError
from semantics.mlir.waits import LOOP_ATTR, SIGNAL, WAIT, parse_threshold

__all__ = ["LOOP_ATTR", "SIGNAL", "SYNCPROOF", "WAIT", "SignalOp", "WaitOp", "context", "signal_op", "wait_op"]

def _string(op, name: str) -> str:
    value = op.attributes.get(name)
    return value.data if isinstance(value, StringAttr) else ""


@irdl_op_definition
class WaitOp(IRDLOperation):
    """`core` waits until `counter`'s completion counter reaches `threshold`."""

    name = WAIT
    args = var_operand_def()
    core = attr_def(StringAttr)
    counter = attr_def(StringAttr)
    threshold = attr_def(StringAttr)
    names = opt_attr_def(StringAttr)

    def verify_(self) -> None:
        names = _string(self, "names").split()
        if len(names) != len(self.args):
            raise VerifyException(f"syncproof.wait names {len(names)} operands ({' '.join(names) or 'none'}) "
                                  f"but has {len(self.args)}")
        if len(set(names)) != len(names):
            raise VerifyException(f"syncproof.wait names an operand twice: {' '.join(names)}")
        if not self.core.data or not self.counter.data:
            raise VerifyException("syncproof.wait needs a core and a counter")
        try:
            parse_threshold(self.threshold.data)
        except KernelError as err:
            raise VerifyException(err.message) from None


@irdl_op_definition
class SignalOp(IRDLOperation):
    """`core` bumps its completion counter once the op before it has completed."""

    name = SIGNAL
    core = attr_def(StringAttr)

    def verify_(self) -> None:
        if not self.core.data:
            raise VerifyException("syncproof.signal needs a core")


SYNCPROOF = Dialect("syncproof", [WaitOp, SignalOp])


def wait_op(operands, core: str, counter: str, threshold: str, names: str) -> WaitOp:
    attributes = {"core": StringAttr(core), "counter": StringAttr(counter), "threshold": StringAttr(threshold)}
    if names:
        attributes["names"] = StringAttr(names)
    return WaitOp.create(operands=list(operands), attributes=attributes)


def signal_op(core: str) -> SignalOp:
    return SignalOp.create(attributes={"core": StringAttr(core)})


def context():
    """xdsl's dialects, this one, unregistered ops allowed (SNAX's own)."""
    from semantics.mlir.parse import context as base

    ctx = base()
    ctx.load_dialect(SYNCPROOF)
    return ctx
