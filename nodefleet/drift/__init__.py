"""What a change does to running nodes: Karpenter's drift hash as Karpenter computes it (`karpenter_hash`),
its drift rules, requirements included (`rules`), and the forecast a pull request shows (`forecast`).

It is the top layer of the domain package: it may import `render`, `stackfile`, `bootimages`, `apiserver`
and the root vocabulary, and nothing in `nodefleet` imports it.
"""
