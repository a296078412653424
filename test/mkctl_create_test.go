package test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/test/framework"
)

// TestMkctlCreate: mkctl create makes a namespace, a configmap and a
// generic secret from the command line, and the objects of a manifest,
// as kubectl create does: one that exists is an error, not an update.
func TestMkctlCreate(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	rates := filepath.Join(dir, "rates.json")
	if err := os.WriteFile(rates, []byte(`{"EUR":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(dir, "blob")
	if err := os.WriteFile(blob, []byte{0xff, 0xfe, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-file\ndata:\n  a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args       []string
		out, error string
	}{
		{[]string{"create", "namespace", "audit"}, "namespace/audit created\n", ""},
		{[]string{"-n", "audit", "create", "configmap", "shop", "--from-literal=currency=EUR", "--from-file=" + rates, "--from-file=raw=" + blob},
			"configmap/shop created\n", ""},
		{[]string{"-n", "audit", "create", "secret", "generic", "db", "--from-literal=password=s3cret"}, "secret/db created\n", ""},
		{[]string{"create", "-f", manifest}, "configmap/from-file created\n", ""},
		{[]string{"create", "-f", manifest}, "", "AlreadyExists"},
		{[]string{"create", "namespace", "audit"}, "", "AlreadyExists"},
		{[]string{"create", "configmap", "dup", "--from-literal=a=1", "--from-literal=a=2"}, "", `key "a" given twice`},
		{[]string{"create", "configmap", "bad", "--from-literal=novalue"}, "", "want KEY=VALUE"},
		{[]string{"create", "deployment", "web"}, "", `unknown kind "deployment" to create`},
	} {
		code, out, errOut := mk(t, append([]string{"--server", s.URL}, tc.args...)...)
		if tc.error == "" && (code != 0 || out != tc.out) || tc.error != "" && (code == 0 || !strings.Contains(errOut, tc.error)) {
			t.Errorf("mkctl %s: %d %q %q; want %q, error %q", strings.Join(tc.args, " "), code, out, errOut, tc.out, tc.error)
		}
	}
	cm, err := s.Client.ConfigMaps("audit").Get(ctx, "shop")
	if err != nil || cm.Data["currency"] != "EUR" || cm.Data["rates.json"] != `{"EUR":1}` || string(cm.BinaryData["raw"]) != "\xff\xfe\x00" {
		t.Errorf("configmap shop: %+v %v", cm, err)
	}
	sec, err := s.Client.Secrets("audit").Get(ctx, "db")
	if err != nil || string(sec.Data["password"]) != "s3cret" || sec.Type != "Opaque" {
		t.Errorf("secret db: %+v %v", sec, err)
	}
}
