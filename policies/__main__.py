"""Entry point the Pulumi CLI runs for `--policy-pack policies`. Nothing may print to stdout before the
PolicyPack starts: the CLI reads the first line as the pack's port."""

import sys
from pathlib import Path

# The rules share the domain package with the program; it lives at the project root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policies.pack import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
