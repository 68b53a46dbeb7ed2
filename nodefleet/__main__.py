"""``python -m nodefleet``: the process entry point, handed straight to the command line package ``cli``.

The domain package stays pure: no module of it imports this one, ``import nodefleet`` never runs it, and
the layering tests check that this file is the only one here that reaches outside the package.
"""

import sys

from cli.main import main

sys.exit(main())
