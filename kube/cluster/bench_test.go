package cluster_test

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetaudit/fleetaudit/kube/cluster"
)

// BenchmarkRead lists 200 nodes and 2000 pods (10 per node) in pages of
// 500 and joins them: one run's read of a mid-sized GPU cluster.
func BenchmarkRead(b *testing.B) {
	env := apiserver.Get(b)
	ctx := context.Background()
	// client-go's default 5 requests a second would make seeding minutes.
	seed := rest.CopyConfig(env.Config)
	seed.QPS, seed.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(seed)
	if err != nil {
		b.Fatal(err)
	}
	const nodes, perNode = 200, 10
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// Seeding is 2,200 API calls: sixteen at a time.
	var g errgroup.Group
	g.SetLimit(16)
	for i := range nodes {
		g.Go(func() error {
			name := fmt.Sprintf("bench-%03d", i)
			n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "yes"}}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
			if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
				return err
			}
			for j := range perNode {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: "bench"},
					Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "img",
						Env:       []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}
				if _, err := cs.CoreV1().Pods("bench").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		c, err := cluster.Read(ctx, env.Config, cluster.Options{NodeSelector: "bench=yes"})
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Nodes) != nodes {
			b.Fatalf("%d nodes", len(c.Nodes))
		}
	}
}
