package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/operator"
)

// kv writes, checks, reads or deletes data, or prints the revision, in an application's etcd. In the sandbox
// the members' client URLs are in the ConfigMap <cluster>-sandbox-endpoints
// the operator stand-in publishes; on a real cluster the same is done with
// `kubectl exec` and etcdctl in a member Pod.
func kv(args []string) error {
	if len(args) < 1 {
		usage()
	}
	verb := args[0]
	fs := flag.NewFlagSet("kv "+verb, flag.ExitOnError)
	ns := fs.String("namespace", "", "application namespace")
	cluster := fs.String("cluster", "etcd", "EtcdCluster name")
	set := kvdata.Set{}
	fs.StringVar(&set.Prefix, "prefix", "/sentinel", "key prefix")
	fs.IntVar(&set.N, "count", 1000, "number of keys")
	fs.IntVar(&set.Size, "size", 1024, "bytes per value")
	fs.StringVar(&set.Gen, "generation", "v1", "value generation (check compares against it)")
	_ = fs.Parse(args[1:])
	if *ns == "" {
		return fmt.Errorf("--namespace is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	eps, err := endpoints(ctx, *ns, *cluster)
	if err != nil {
		return err
	}
	cli, err := etcdproc.Client(eps...)
	if err != nil {
		return err
	}
	defer cli.Close()
	switch verb {
	case "write":
		start := time.Now()
		if err := set.Write(ctx, cli); err != nil {
			return err
		}
		fmt.Printf("wrote %d keys under %s/ (%d bytes each, generation %q) in %s\n", set.N, set.Prefix, set.Size, set.Gen, time.Since(start).Round(time.Millisecond))
	case "check":
		if err := set.Check(ctx, cli); err != nil {
			return fmt.Errorf("data check failed: %w", err)
		}
		fmt.Printf("all %d keys under %s/ hold generation %q\n", set.N, set.Prefix, set.Gen)
	case "put":
		if fs.NArg() != 2 {
			return fmt.Errorf("kv put takes a key and a value")
		}
		if _, err := cli.Put(ctx, fs.Arg(0), fs.Arg(1)); err != nil {
			return err
		}
		fmt.Printf("put %s\n", fs.Arg(0))
	case "delete":
		// Every key under the prefix, as an accident or a careless
		// controller would remove a tenant's objects.
		resp, err := cli.Delete(ctx, set.Prefix+"/", clientv3.WithPrefix())
		if err != nil {
			return err
		}
		fmt.Printf("deleted %d keys under %s/\n", resp.Deleted, set.Prefix)
	case "revision":
		// The revision every key-value store write raises; a restore
		// without a bump takes it back to the snapshot's.
		resp, err := cli.Get(ctx, "/", clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		fmt.Println(resp.Header.Revision)
	case "get":
		if fs.NArg() != 1 {
			return fmt.Errorf("kv get takes one key")
		}
		resp, err := cli.Get(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			v := string(kv.Value)
			if len(v) > 60 {
				v = v[:60] + "..."
			}
			fmt.Printf("%s = %s\n", kv.Key, v)
		}
	default:
		usage()
	}
	return nil
}

func endpoints(ctx context.Context, ns, cluster string) ([]string, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster + "-sandbox-endpoints"}, &cm); err != nil {
		return nil, fmt.Errorf("find the members of %s/%s (is the EtcdCluster running?): %w", ns, cluster, err)
	}
	eps := strings.Split(cm.Data[operator.EndpointsKey], ",")
	if len(eps) == 0 || eps[0] == "" {
		return nil, fmt.Errorf("EtcdCluster %s/%s has no running member", ns, cluster)
	}
	return eps, nil
}
