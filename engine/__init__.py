"""The real Pulumi engine for this project: what engine/bootstrap set up (status), the CLI's version rule
(semver), the engine's event log (events), scratch projects to run stacks in (project) and what a fleet
costs the engine (sizing). engine/bootstrap and engine/run are the shell entry points."""
