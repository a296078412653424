package apiserver

import (
	"fmt"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
)

// nodeCredentials serves POST /v1-minik8s/node-credentials: a node that
// holds the join token (as k3s agents do) gets a client certificate of
// its own, user system:node:NAME in group system:nodes, so that the node
// role and the node restriction apply to it. A node renews with its own
// certificate, for its own name only.
func (s *Server) nodeCredentials(c *gin.Context) {
	if s.creds == nil {
		fail(c, fmt.Errorf("this apiserver serves no secure port: %w", errdefs.ErrNotFound))
		return
	}
	var req api.NodeCredentialsRequest
	h := &handlers{srv: s, maxBody: 64 << 10}
	if err := h.decodeBody(c, &req); err != nil {
		fail(c, err)
		return
	}
	if err := validation.Name(api.NodesResource, req.NodeName); err != nil {
		fail(c, errdefs.Invalid("nodeName", "%v", err))
		return
	}
	if node, ok := nodeName(userOf(c.Request.Context())); ok && node != req.NodeName {
		fail(c, fmt.Errorf("node %q may renew only its own credentials, not %q's: %w", node, req.NodeName, errdefs.ErrForbidden))
		return
	}
	cert, err := s.creds.ca.SignCSR([]byte(req.ClientCSR), pki.CertSpec{
		CommonName: rbac.NodeUserPrefix + req.NodeName, Organization: []string{rbac.NodesGroup}, Client: true})
	if err != nil {
		fail(c, errdefs.Invalid("clientCSR", "%v", err))
		return
	}
	out := api.NodeCredentials{ClientCertificate: string(cert), CA: string(s.creds.ca.CertPEM)}
	if req.ServingCSR != "" {
		ip := net.ParseIP(req.NodeIP)
		if ip == nil {
			fail(c, errdefs.Invalid("nodeIP", "%q is not an IP address: the kubelet's serving certificate is for its node address", req.NodeIP))
			return
		}
		serving, err := s.creds.ca.SignCSR([]byte(req.ServingCSR), KubeletServingSpec(req.NodeName, ip))
		if err != nil {
			fail(c, errdefs.Invalid("servingCSR", "%v", err))
			return
		}
		out.ServingCertificate = string(serving)
	}
	c.JSON(http.StatusCreated, out)
}

// KubeletServingSpec is the serving certificate of node name's kubelet on
// ip: the apiserver checks the name when it fetches logs.
func KubeletServingSpec(name string, ip net.IP) pki.CertSpec {
	return pki.CertSpec{CommonName: rbac.NodeUserPrefix + name, Organization: []string{rbac.NodesGroup}, IPAddresses: []net.IP{ip}, Server: true}
}
