"""What the Kubernetes API server would say about an object: the CRD store (shipped and user CRDs), the
structural schema with defaulting, pruning and ratcheting (`schema`), the string formats (`formats`), the
CEL rules and their libraries (`cel`), the previous object an update is judged against (`previous`), which
rules a run exercised (`coverage`, `rule_log`) and the advice printed beside a refusal (`advice`).

It imports only the shared vocabulary at the root of the package (`nodefleet.kinds`,
`nodefleet.render_layout`): nothing of the stack file, the renderers or the forecast, so `crd-schema` and
the CRD policy judge any object, whoever wrote it.
"""
