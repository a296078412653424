package flags

import (
	"flag"
	"os"
)

// Client registers how a component reaches the apiserver: --apiserver
// (def: client.ServerFromEnv()) and --kubeconfig; client.FromFlags makes
// the client of the two. The package stays clear of pkg/client, whose
// dependencies funcserver, in every function pod, must not carry.
func Client(fs *flag.FlagSet, server *string, def string, kubeconfig *string) {
	fs.StringVar(server, "apiserver", def, "URL of the apiserver")
	fs.StringVar(kubeconfig, "kubeconfig", "", "kubeconfig with the apiserver and this component's credentials (its server wins over --apiserver unless that is given)")
}

// JoinToken registers --token, a node's join token (default
// $MINIK8S_TOKEN).
func JoinToken(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "token", os.Getenv("MINIK8S_TOKEN"), "node join token (the server's DATA/node-token; or set MINIK8S_TOKEN): the kubelet gets credentials of its own with it")
}
