// Command machinepool-controller runs Cluster API core's own MachinePool reconciler, and nothing
// else, in a minimal controller-runtime manager, so capi-ts providers can be judged by CAPI core itself
// against the real control plane (KUBECONFIG or --kubeconfig says which).
package main

import (
	"flag"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
)

func main() {
	var watchFilter string
	var concurrency int
	flag.StringVar(&watchFilter, "watch-filter", "", "only reconcile objects whose cluster.x-k8s.io/watch-filter label has this value")
	flag.IntVar(&concurrency, "concurrency", 2, "MachinePools reconciled at the same time")
	logOptions := zap.Options{Development: true}
	logOptions.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOptions)))
	log := ctrl.Log.WithName("machinepool-controller")

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, clusterv1beta1.AddToScheme, clusterv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			log.Error(err, "building the scheme")
			os.Exit(1)
		}
	}

	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}

	// The reconciler reads Nodes of the workload cluster through the ClusterCache (from the
	// <cluster>-kubeconfig Secret); without one it reports the cluster as not reachable and requeues.
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient:     mgr.GetClient(),
		WatchFilterValue: watchFilter,
		Client:           clustercache.ClientOptions{UserAgent: "capi-ts-machinepool-controller"},
	}, controller.Options{MaxConcurrentReconciles: 1})
	if err != nil {
		log.Error(err, "creating the ClusterCache")
		os.Exit(1)
	}

	if err := (&controllers.MachinePoolReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		ClusterCache:     clusterCache,
		WatchFilterValue: watchFilter,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency}); err != nil {
		log.Error(err, "creating the MachinePool controller")
		os.Exit(1)
	}

	log.Info("starting")
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}
