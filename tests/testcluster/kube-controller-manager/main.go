// The test clusters' garbage collector and namespace controller: kube-controller-manager exactly as
// k8s.io/kubernetes/cmd/kube-controller-manager builds it, from the Go module proxy. tests/testcluster.py runs
// it with only those two controllers, so that a foreground deletion (the Kubernetes provider's default) and a
// namespace deletion complete as on a cluster; no kubelet, no nodes.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
