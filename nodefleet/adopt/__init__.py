"""Adopting the clusters a team already runs: live Kubernetes objects in, the stack file that declares them out,
the inverse of `render`.

`documents` reads the sources (multi-document YAML, `oc get -o yaml` Lists, `hypershift create cluster aws
--render` output) and refuses what cannot be adopted (not a Kubernetes object, being deleted, an API version
nodefleet does not model, another platform, a paused cluster, one name in two namespaces); `hosted`,
`standalone` and `karpenter` turn the objects into the stack file's model, saying where a value was inferred;
`fidelity` renders the result with nodefleet's own renderers and compares it with the live objects field by
field, so that a stack is written only when its render reproduces what runs; `importer` puts them together.

It may import `stackfile`, `render`, `bootimages`, `apiserver` and the root vocabulary; never Pulumi, the
command line or a Kubernetes client: the objects come in as plain dicts, from files or from whoever read them.
"""
