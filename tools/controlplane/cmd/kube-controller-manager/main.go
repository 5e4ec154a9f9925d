// Command kube-controller-manager is the upstream Kubernetes controller manager, built from the same
// k8s.io/kubernetes module as kube-apiserver, so that the test bed's control plane collects garbage
// (dependents of a deleted owner) and finalizes namespaces as a real cluster does.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
