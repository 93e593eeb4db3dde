"""`syncproof-opt`: xdsl-opt with the syncproof passes and dialect registered (whether
or not xDSL's plugin discovery found them), for pipelines such as

    syncproof-opt --allow-unregistered-dialect -p canonicalize,syncproof-insert-sync in.mlir

A pass that fails prints its message on stderr, no traceback: exit 1 when
`syncproof-verify-sync` refutes (or cannot decide) the property, 2 for input the
passes cannot take, xdsl's own parse and verification errors, an unknown pass or a
malformed pass option, and an input file that cannot be read.
"""

from __future__ import annotations

import sys

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from verify.xdsl_passes.universe import DIALECTS, PASSES


class SyncproofOptMain(xDSLOptMain):
    version_format = "syncproof-opt built from xdsl version {xdsl_version}"

    def register_all_dialects(self):
        super().register_all_dialects()
        registered = set(self.ctx.registered_dialect_names)
        for name, factory in DIALECTS.items():
            if name not in registered:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in PASSES.items():
            if name not in self.available_passes:
                self.register_pass(name, factory)


def main(args=None) -> int:
    from verify.xdsl_passes.errors import SyncCheckFailed

    try:  # the pipeline is parsed here: an unknown pass is a ValueError
        tool = SyncproofOptMain(description="syncproof-opt: xdsl-opt with syncproof's passes", args=args)
    except (ValueError, ArgSpecParseError) as err:
        print(f"syncproof-opt: error: {err}", file=sys.stderr)
        return 2
    try:
        tool.run()
    except SyncCheckFailed as err:
        print(err, file=sys.stderr)
        return 1
    except (DiagnosticException, ParseError) as err:
        print(f"syncproof-opt: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"syncproof-opt: error: {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
