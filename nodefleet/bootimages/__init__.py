"""Boot images and releases: RHCOS boot image catalogs, OpenShift versions, release images, and the skew
limits between a boot image, a release and a control plane.

Owns `catalog` (reading and resolving a release's boot image catalog), `versions` (OpenShift version
parsing and ordering), `releases` (release image references) and `skew` (what the skew policies judge). It
imports only the standard library, its own modules and third-party parsers: nothing else of nodefleet, so
the stack file model, the renderers, the policies and the forecast can all lean on it.
"""
