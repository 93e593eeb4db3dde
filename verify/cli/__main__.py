"""`python -m verify.cli`: the syncproof command."""

import sys

from verify.cli.main import main

sys.exit(main())
