"""nodefleet's command line (``python -m nodefleet``): check, render, and the commands built on them.

It sits on top of every other layer: it runs the program under the mock-runtime harness (``mockruntime``),
evaluates the policy pack (``policies``) and writes what the domain code (``nodefleet``) renders. Nothing
below it imports it.
"""
