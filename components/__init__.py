"""Thin Pulumi components over nodefleet's pure renderers."""
