// Command capi-core runs the parts of Cluster API core that judge an InfraMachinePool provider, from
// one CAPI release: the MachinePool controller, the Machine controller (MachinePool Machines are
// Machines), the ClusterCache that reaches workload clusters through their <cluster>-kubeconfig
// Secret, and CAPI's admission and conversion webhooks for the kinds those controllers use. capi-ts's
// test bed (startControlPlane({ capiCore: true })) starts it next to a real kube-apiserver and etcd.
//
// Compared with CAPI's own manager it leaves out the controllers a MachinePool does not need
// (Cluster, MachineSet, MachineDeployment, topology, ClusterResourceSet, MachineHealthCheck) and
// leader election; everything it runs is CAPI's code, with CAPI's defaults.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	ctrlconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinepool"
	coresetup "sigs.k8s.io/cluster-api/core/setup"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/core/webhooks/conversion"
	"sigs.k8s.io/cluster-api/util/index"
)

func main() {
	var (
		watchFilter    string
		concurrency    int
		webhookPort    int
		webhookCertDir string
		webhookHost    string
		healthAddr     string
		selfSigned     bool
		syncPeriod     time.Duration
	)
	flag.StringVar(&watchFilter, "watch-filter", "", "only reconcile objects whose cluster.x-k8s.io/watch-filter label has this value")
	flag.IntVar(&concurrency, "concurrency", 10, "objects of each kind reconciled at the same time (CAPI's default is 10)")
	flag.IntVar(&webhookPort, "webhook-port", 0, "port of the webhook server (TLS); 0 serves no webhooks")
	flag.StringVar(&webhookHost, "webhook-host", "127.0.0.1", "address the webhook server listens on")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", "", "folder with tls.crt and tls.key for the webhook server")
	flag.BoolVar(&selfSigned, "webhook-self-signed", false, "write a throwaway CA (ca.crt) and a serving pair for --webhook-host into --webhook-cert-dir first")
	flag.StringVar(&healthAddr, "health-addr", "0", "address of /healthz and /readyz (\"0\" turns them off)")
	flag.DurationVar(&syncPeriod, "sync-period", 10*time.Minute, "how often every watched object is reconciled again (CAPI's default is 10m)")
	logOptions := zap.Options{Development: true}
	logOptions.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOptions)))
	log := ctrl.Log.WithName("capi-core")

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		clusterv1beta1.AddToScheme, clusterv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			log.Error(err, "building the scheme")
			os.Exit(1)
		}
	}

	if selfSigned {
		if webhookPort == 0 || webhookCertDir == "" {
			log.Error(nil, "--webhook-self-signed needs --webhook-port and --webhook-cert-dir")
			os.Exit(2)
		}
		if err := writeSelfSignedServingCert(webhookCertDir, webhookHost); err != nil {
			log.Error(err, "writing the self-signed webhook certificate")
			os.Exit(1)
		}
	}

	options := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: healthAddr,
	}
	options.Cache.SyncPeriod = &syncPeriod
	if webhookPort != 0 {
		options.WebhookServer = webhook.NewServer(webhook.Options{
			Host:    webhookHost,
			Port:    webhookPort,
			CertDir: webhookCertDir,
		})
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), options)
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()

	// The controllers' mappers (a Node to its MachinePool by providerID or nodeRef name, …) list
	// through these field indexes; without them a mapper's List fails and the event is dropped.
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		log.Error(err, "adding CAPI's field indexes")
		os.Exit(1)
	}

	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient:     mgr.GetClient(),
		WatchFilterValue: watchFilter,
		// The workload cluster's cache and client as core's own main.go sets them up: the Machine
		// controller finds a Machine's Node by an index on spec.providerID (without it the Machine
		// never gets a nodeRef: NodeHealthy InternalError), and drain lists Pods uncached by
		// spec.nodeName (a cached client has no such index: the drain fails).
		Cache:  coresetup.ClusterCacheCacheOptions(),
		Client: coresetup.ClusterCacheClientOptions("capi-ts-capi-core", 20, 30),
	}, controller.Options{MaxConcurrentReconciles: concurrency})
	if err != nil {
		log.Error(err, "creating the ClusterCache")
		os.Exit(1)
	}

	if err := (&machinepool.Reconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		ClusterCache:     clusterCache,
		WatchFilterValue: watchFilter,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency}); err != nil {
		log.Error(err, "creating the MachinePool controller")
		os.Exit(1)
	}
	if err := (&machine.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		ClusterCache:                clusterCache,
		WatchFilterValue:            watchFilter,
		RemoteConditionsGracePeriod: 5 * time.Minute,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency}); err != nil {
		log.Error(err, "creating the Machine controller")
		os.Exit(1)
	}

	if webhookPort != 0 {
		setupWebhooks(mgr, clusterCache, log)
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			log.Error(err, "adding the webhook readiness check")
			os.Exit(1)
		}
	}

	log.Info("starting", "webhooks", webhookPort != 0)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}

// setupWebhooks registers CAPI's defaulting and validating webhooks of the kinds a MachinePool
// involves (Cluster, Machine, MachinePool), on the paths CAPI's own manifests point at, and the
// conversion webhook (/convert) of every cluster.x-k8s.io kind, so that v1beta1 clients read the
// objects of the test bed as they would on a cluster that clusterctl set up.
func setupWebhooks(mgr ctrl.Manager, clusterCache clustercache.ClusterCache, log interface {
	Error(err error, msg string, keysAndValues ...any)
}) {
	reader := mgr.GetAPIReader()
	conversion.SetAPIVersionGetter(func(ctx context.Context, gk schema.GroupKind) (string, error) {
		return contractAPIVersion(ctx, reader, gk)
	})
	for name, setup := range map[string]func(ctrl.Manager) error{
		"Cluster":     (&coreadmission.Cluster{Client: mgr.GetClient(), ClusterCacheReader: clusterCache}).SetupWebhookWithManager,
		"Machine":     (&coreadmission.Machine{}).SetupWebhookWithManager,
		"MachinePool": (&coreadmission.MachinePool{}).SetupWebhookWithManager,
	} {
		if err := setup(mgr); err != nil {
			log.Error(err, "creating the webhook", "kind", name)
			os.Exit(1)
		}
	}
	for name, setup := range map[string]func(ctrl.Manager) error{
		"ClusterClass":       conversionOnly(&clusterv1.ClusterClass{}, conversion.ClusterClass),
		"MachineSet":         conversionOnly(&clusterv1.MachineSet{}, conversion.MachineSet),
		"MachineDeployment":  conversionOnly(&clusterv1.MachineDeployment{}, conversion.MachineDeployment),
		"MachineHealthCheck": conversionOnly(&clusterv1.MachineHealthCheck{}, conversion.MachineHealthCheck),
		"MachineDrainRule":   conversionOnly(&clusterv1.MachineDrainRule{}, conversion.MachineDrainRule),
	} {
		if err := setup(mgr); err != nil {
			log.Error(err, "creating the conversion webhook", "kind", name)
			os.Exit(1)
		}
	}
}

// conversionOnly registers a kind's converter on the shared /convert endpoint, with no admission.
func conversionOnly[T runtime.Object](object T, converter func(*runtime.Scheme) (ctrlconversion.Converter, error)) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		return ctrl.NewWebhookManagedBy(mgr, object).WithConverter(converter).Complete()
	}
}

// contractLabelPrefix is the label an infrastructure CRD carries per contract version, for example
// cluster.x-k8s.io/v1beta2: v1beta1_v1beta2, listing its API versions that implement that contract.
const contractLabelPrefix = "cluster.x-k8s.io/"

// contractAPIVersion answers which apiVersion of a referenced kind implements the newest contract,
// as CAPI's conversion webhooks need when they turn a v1beta2 reference (apiGroup + kind) back into a
// v1beta1 ObjectReference (apiVersion + kind).
func contractAPIVersion(ctx context.Context, reader client.Reader, gk schema.GroupKind) (string, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := reader.List(ctx, crds); err != nil {
		return "", fmt.Errorf("listing CRDs to find the version of %s: %w", gk, err)
	}
	for _, crd := range crds.Items {
		if crd.Spec.Group != gk.Group || crd.Spec.Names.Kind != gk.Kind {
			continue
		}
		for _, contract := range []string{"v1beta2", "v1beta1"} {
			if versions, ok := crd.Labels[contractLabelPrefix+contract]; ok && versions != "" {
				list := strings.Split(versions, "_")
				return schema.GroupVersion{Group: gk.Group, Version: list[len(list)-1]}.String(), nil
			}
		}
		served := []string{}
		for _, version := range crd.Spec.Versions {
			if version.Storage {
				return schema.GroupVersion{Group: gk.Group, Version: version.Name}.String(), nil
			}
			served = append(served, version.Name)
		}
		sort.Strings(served)
		return "", fmt.Errorf("CRD %s has no contract label and no storage version among %v", crd.Name, served)
	}
	return "", fmt.Errorf("no CRD defines %s", gk)
}
