// The Gadget controller of `./dev bench peers`, written with controller-runtime: it reconciles
// spec.size into status.observedSize with 8 workers, reading from the manager's cache. The benchmark
// starts it as a separate process against the same API server as the TypeScript peers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var gadgetGVK = schema.GroupVersionKind{Group: "bench.capi-ts.dev", Version: "v1", Kind: "Gadget"}

type reconciler struct {
	client     client.Client
	expect     int64
	reconciles atomic.Int64
}

// heapBytes is the live heap after a full collection, as the Node peers report heapUsed after gc().
func heapBytes() uint64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.reconciles.Add(1) == r.expect {
		fmt.Printf("idle %d\n", r.expect)
		go func() {
			time.Sleep(time.Second)
			fmt.Printf("heap %d\n", heapBytes())
		}()
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gadgetGVK)
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	size, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size")
	observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedSize")
	if found && observed == size {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(obj.DeepCopy())
	if err := unstructured.SetNestedField(obj.Object, size, "status", "observedSize"); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.client.Status().Patch(ctx, obj, patch)
}

func main() {
	workers := flag.Int("workers", 8, "concurrent reconciles")
	expect := flag.Int64("expect", 0, "report idle after this many reconciles")
	flag.Parse()
	fmt.Printf("boot-heap %d\n", heapBytes())
	// controller-runtime registers --kubeconfig itself; GetConfig reads it.
	config, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(2)
	}
	// The same client-side limits as the TypeScript peers, which have none.
	config.QPS = -1
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Read unstructured objects from the cache too, as the TypeScript peers do (the default
		// client sends every Get of an unstructured object to the API server).
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
	gadget := &unstructured.Unstructured{}
	gadget.SetGroupVersionKind(gadgetGVK)
	err = ctrl.NewControllerManagedBy(mgr).
		For(gadget).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).
		Complete(&reconciler{client: mgr.GetClient(), expect: *expect})
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(1)
	}
}
