"""What the Kubernetes API server would say about an object: the CRD store (shipped and user CRDs), the
structural schema with defaulting, pruning and ratcheting (`schema`), the value parsers and string formats
(`formats`, `strfmt`, `quantity`), the CEL rules (`cel`, their checked AST: `cel_ast`) and Kubernetes' CEL
libraries (`cel_library`), what the API server refuses in a CRD's rules (`crd_rules`), the
previous object an update is judged against (`previous`), which
rules a run exercised (`coverage`, `rule_log`) and the advice printed beside a refusal (`advice`).

It imports only the shared vocabulary at the root of the package (`nodefleet.kinds`,
`nodefleet.render_layout`): nothing of the stack file, the renderers or the forecast, so `crd-schema` and
the CRD policy judge any object, whoever wrote it.
"""
