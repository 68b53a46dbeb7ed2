"""The stack file a user writes: its model and validation (`model`, with its hosted-cluster and Karpenter
parts in `hosted` and `karpenter` and the shared validators in `modelbase`), the paths it may name
(`paths`), strict YAML reading (`yamlfile`), stack secrets (`secrets`), EC2 instance types
(`instance_types`) and the rollout waves a stack names (`waves`).

It may import `bootimages`, `apiserver` and the root vocabulary (`nodefleet.kinds`,
`nodefleet.render_layout`), never a renderer or the forecast: a validated stack file is a value the
renderers take, and collisions between the objects of several clusters or stacks are refused where those
objects are planned (`nodefleet.render.objects`).
"""
