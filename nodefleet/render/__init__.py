"""Every object a stack declares, as pure data: the object plan of a stack and of a fleet of stacks with its
collision refusal (`objects`), the renderers for MachineSets and MachineConfigPools (`machinesets`),
Karpenter (`karpenter`), HyperShift (`hosted`) and Ignition user data (`ignition`), the Kubernetes
provider's YAML writer (`provider_yaml`) and the GitOps files beside a render (`gitops`).

It may import `stackfile`, `bootimages`, `apiserver` and the root vocabulary; never `drift`, and never
Pulumi: the components turn these objects into resources, the policies and `check` judge them.
"""
