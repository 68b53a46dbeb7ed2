// kubectl exactly as k8s.io/kubernetes/cmd/kubectl builds it, from the Go module proxy (its command package is
// the staging module k8s.io/kubectl). tests/testcluster.py builds it once per machine; the GitOps tests run the
// scripts `gitops` writes with it, as users do.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Import to initialize client auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
