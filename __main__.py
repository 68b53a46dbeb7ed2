"""nodefleet: where this stack's OpenShift nodes come from."""

from pathlib import Path

import pulumi

from components.fleet import build_fleet, load_stack_fleet
from components.shutdown import errors_reported_once, exit_quietly_when_the_engine_stops_us

exit_quietly_when_the_engine_stops_us()
with errors_reported_once():  # one line for invalid configuration, not the engine's generic one after it
    fleet, secrets, registry = load_stack_fleet(Path(__file__).parent)
    clusters = build_fleet(fleet, secrets, registry)

pulumi.export("clusters", sorted(c.config.name for c in fleet.clusters))
pulumi.export("outputMode", fleet.config.output.mode)
pulumi.export("renderDirectory", fleet.render_directory if fleet.config.output.mode == "render" else None)
