package apiserver

import (
	"fmt"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"minik8s/apiserver/auth"
	"minik8s/apiserver/authz"
	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
)

// nodeCredentials serves POST /v1-minik8s/node-credentials: a node that
// holds the join token (as k3s agents do) gets a client certificate of
// its own, user system:node:NAME in group system:nodes, so that the node
// role and the node restriction apply to it, and a serving certificate for
// its address. A node renews with its own certificate, for its own name
// only. Either way the request carries the node's password, which the
// first request for the name binds (nodepassword.go), and the address is
// checked (nodeaddress.go); a request refused issues nothing.
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
	ctx := c.Request.Context()
	ip, err := checkCredentialsRequest(&req)
	if err != nil {
		fail(c, err)
		return
	}
	node, self := authz.NodeName(rbac.UserOf(ctx))
	if self && node != req.NodeName {
		fail(c, fmt.Errorf("node %q may renew only its own credentials, not %q's: %w", node, req.NodeName, errdefs.ErrForbidden))
		return
	}
	rec, err := s.nodePasswords.Check(ctx, req.NodeName, req.NodePassword, self)
	if err == nil && ip != nil {
		err = s.checkServingAddress(ctx, req.NodeName, ip)
		if err == nil && rec != nil && rec.Address != "" && rec.Address != ip.String() {
			err = auth.BoundElsewhere(req.NodeName, rec.Address, ip.String())
		}
	}
	if err != nil {
		fail(c, err)
		return
	}
	cert, err := s.creds.ca.SignCSR([]byte(req.ClientCSR), pki.CertSpec{
		CommonName: rbac.NodeUserPrefix + req.NodeName, Organization: []string{rbac.NodesGroup}, Client: true})
	if err != nil {
		fail(c, errdefs.Invalid("clientCSR", "%v", err))
		return
	}
	out := api.NodeCredentials{ClientCertificate: string(cert), CA: string(s.creds.ca.CertPEM)}
	var serving []byte
	if ip != nil {
		if serving, err = s.creds.ca.SignCSR([]byte(req.ServingCSR), KubeletServingSpec(req.NodeName, ip)); err != nil {
			fail(c, errdefs.Invalid("servingCSR", "%v", err))
			return
		}
		out.ServingCertificate = string(serving)
	}
	// Bound last: a request refused above leaves no record.
	if err := s.nodePasswords.Bind(ctx, rec, req.NodeName, req.NodePassword, ip); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

// checkCredentialsRequest checks the request's fields, and returns the
// address of the serving certificate asked for (nil for none).
func checkCredentialsRequest(req *api.NodeCredentialsRequest) (net.IP, error) {
	if err := validation.Name(api.NodesResource, req.NodeName); err != nil {
		return nil, errdefs.Invalid("nodeName", "%v", err)
	}
	if n := len(req.NodePassword); n < auth.MinNodePassword || n > auth.MaxNodePassword {
		return nil, errdefs.Invalid("nodePassword", "%d characters: the node's password (the kubelet's root dir keeps it, in node-password) "+
			"must have %d to %d: it proves the node's name from its first join on", n, auth.MinNodePassword, auth.MaxNodePassword)
	}
	if req.ServingCSR == "" {
		return nil, nil
	}
	ip := net.ParseIP(req.NodeIP)
	if ip == nil {
		return nil, errdefs.Invalid("nodeIP", "%q is not an IP address: the kubelet's serving certificate is for its node address", req.NodeIP)
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return ip, nil
}

// KubeletServingSpec is the serving certificate of node name's kubelet on
// ip: the apiserver checks the name when it fetches logs.
func KubeletServingSpec(name string, ip net.IP) pki.CertSpec {
	return pki.CertSpec{CommonName: rbac.NodeUserPrefix + name, Organization: []string{rbac.NodesGroup}, IPAddresses: []net.IP{ip}, Server: true}
}
