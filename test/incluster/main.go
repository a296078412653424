// Command incluster is a client-go program the tests run in a pod, as an
// operator runs: with the pod's service account (rest.InClusterConfig:
// KUBERNETES_SERVICE_HOST and _PORT, the mounted token and CA) it lists
// the ConfigMaps of its namespace and then the Secrets, and says what
// each got. It exits 0 when the first is allowed and the second refused.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fail("in-cluster config: %v", err)
	}
	fmt.Printf("server: %s\n", cfg.Host)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail("client: %v", err)
	}
	data, err := os.ReadFile(namespaceFile)
	if err != nil {
		fail("namespace: %v", err)
	}
	ns := strings.TrimSpace(string(data))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The node's Service rules may come a moment after the pod starts:
	// connections are tried again, answers are final.
	var names []string
	for {
		cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, cm := range cms.Items {
				names = append(names, cm.Name)
			}
			break
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) || ctx.Err() != nil {
			fail("configmaps of %s: %v", ns, err)
		}
		fmt.Printf("configmaps of %s: %v; again\n", ns, err)
		time.Sleep(time.Second)
	}
	fmt.Printf("configmaps of %s: %s\n", ns, strings.Join(names, " "))
	_, err = cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		fail("secrets of %s: %v, want forbidden", ns, err)
	}
	fmt.Printf("secrets of %s: forbidden\n", ns)
}

func fail(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
	os.Exit(1)
}
