"""Runs the nodefleet program under Pulumi's mock runtime: no CLI, no providers, no cloud, no cluster.

What it records is what the program asks the engine to register (types, names, inputs, options); provider
behaviour (the Kubernetes provider's Check, rendering, the cluster's admission) is not part of it.
"""
