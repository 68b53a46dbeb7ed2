"""``python -m nodefleet check|render``: see harness/cli.py. The domain package itself imports no Pulumi;
only this entry point reaches into the mock-runtime harness."""

import sys

from harness.cli import main

sys.exit(main())
