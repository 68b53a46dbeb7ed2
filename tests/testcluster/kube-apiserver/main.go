// The test API server: kube-apiserver exactly as k8s.io/kubernetes/cmd/kube-apiserver builds it, from the Go
// module proxy. tests/testcluster.py builds it once per machine and starts it against a local etcd.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
