package pki

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"

	"minik8s/pkg/api"
	"minik8s/pkg/rbac"
)

// Components the apiserver calls (kubelets for logs, function runners for
// handed-over calls) serve with ServerTLS and wrap their handler in
// OnlyAPIServer: a client must show a certificate of the cluster CA, and
// it must be the apiserver's.

// ServerTLS serves cert and takes only clients with a certificate of the
// CA caPEM.
func ServerTLS(cert tls.Certificate, caPEM []byte) (*tls.Config, error) {
	pool, err := CertPool(caPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, NextProtos: []string{"http/1.1"}}, nil
}

// OnlyAPIServer answers 403 to TLS clients that are not the apiserver.
func OnlyAPIServer(what string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			subject := r.TLS.PeerCertificates[0].Subject
			if !rbac.IsAPIServer(subject.CommonName, subject.Organization) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(api.Status{Error: fmt.Sprintf("%q may not use %s: only the apiserver may", subject.CommonName, what),
					Reason: "Forbidden", Code: http.StatusForbidden})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
