package apiserver

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/errdefs"
)

// watchSink is where a watch's events go: newline-delimited JSON on the
// response, or one websocket message each. A write that makes no progress
// for watchWriteTimeout fails: the client stopped reading.
type watchSink interface {
	write(event []byte) error
	flush() error
	close()
}

const (
	// watchWriteTimeout drops a client that stopped reading: no byte of
	// a write taken in that long.
	watchWriteTimeout = 30 * time.Second
	// watchWriteChunk: each chunk of a write gets watchWriteTimeout, so a
	// slow client is told from a dead one.
	watchWriteChunk = 64 << 10
	// watchSendBuffer bounds the kernel's send buffer of a watch's
	// connection (Linux doubles it): what a client that reads nothing
	// leaves in the machine's memory, beyond the watch budget.
	watchSendBuffer = 128 << 10
)

type connKey struct{}

// withConn keeps a request's connection in its context (http.Server's
// ConnContext), for the watches to bound its send buffer.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// capSendBuffer bounds c's kernel send buffer to watchSendBuffer.
func capSendBuffer(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetWriteBuffer(watchSendBuffer)
	}
}

// openWatchSink starts the answer of a watch: a websocket when the request
// asks for one (browsers open one watch per kind, more than the six HTTP/1.1
// connections a page gets, as Kubernetes' dashboards do), else a chunked
// stream. ctx ends when a websocket's peer goes away. An error means the
// upgrade failed and has answered the client already.
func openWatchSink(ctx context.Context, c *gin.Context) (watchSink, context.Context, error) {
	if !websocket.IsWebSocketUpgrade(c.Request) {
		if conn, ok := ctx.Value(connKey{}).(net.Conn); ok {
			capSendBuffer(conn)
		}
		c.Header("Content-Type", "application/json")
		c.Header("Cache-Control", "no-cache")
		// The write deadlines of the watch stay on the connection: none
		// but the watch may use it.
		c.Header("Connection", "close")
		c.Status(http.StatusOK)
		c.Writer.Flush()
		rc := http.NewResponseController(c.Writer)
		if u, ok := c.Writer.(interface{ Unwrap() http.ResponseWriter }); ok {
			rc = http.NewResponseController(u.Unwrap()) // its Flush tells errors
		}
		return &streamSink{c: c, rc: rc}, ctx, nil
	}
	header := http.Header{}
	if p := watchSubprotocol(c.Request); p != "" {
		header.Set("Sec-WebSocket-Protocol", p)
	}
	// The upgrader refuses pages of other origins (watch checked it first
	// too): a browser sends no CORS preflight before a websocket.
	conn, err := watchUpgrader.Upgrade(c.Writer, c.Request, header)
	if err != nil {
		log.WithError(err).WithField("path", c.Request.URL.Path).Debug("apiserver: websocket watch refused")
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	// The client sends nothing but its close: reading notices it.
	go func() {
		defer cancel()
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
		}
	}()
	capSendBuffer(conn.NetConn())
	return &socketSink{conn: conn, cancel: cancel}, ctx, nil
}

var watchUpgrader = websocket.Upgrader{HandshakeTimeout: 10 * time.Second, CheckOrigin: sameOrigin}

// sameOrigin: a websocket request from a browser comes from a page of this
// server (programs send no Origin).
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// refuseForeignWatch refuses, before any work, a websocket watch a page
// of another origin asks for.
func refuseForeignWatch(r *http.Request) error {
	if websocket.IsWebSocketUpgrade(r) && !sameOrigin(r) {
		return fmt.Errorf("a watch over a websocket from a page of another origin (%s): %w", r.Header.Get("Origin"), errdefs.ErrForbidden)
	}
	return nil
}

// bearerProtocolPrefix carries a bearer token in Sec-WebSocket-Protocol,
// as Kubernetes reads it: browsers cannot set an Authorization header on a
// websocket. The token is base64url without padding.
const bearerProtocolPrefix = "base64url.bearer.authorization.k8s.io."

// websocketProtocols are the subprotocols a request's header offers.
func websocketProtocols(h http.Header) []string {
	var out []string
	for _, h := range h.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// websocketBearerToken is the token a websocket request carries in its
// subprotocols: found is false when it carries none, token is "" when the
// one it carries is not base64url.
func websocketBearerToken(r *http.Request) (token string, found bool) {
	if r.Method != http.MethodGet || !websocket.IsWebSocketUpgrade(r) {
		return "", false
	}
	for _, p := range websocketProtocols(r.Header) {
		if enc, ok := strings.CutPrefix(p, bearerProtocolPrefix); ok {
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
			if err != nil {
				return "", true
			}
			return string(b), true
		}
	}
	return "", false
}

// dropWebsocketToken removes the token's subprotocol from h.
func dropWebsocketToken(h http.Header) {
	var keep []string
	offered := websocketProtocols(h)
	for _, p := range offered {
		if !strings.HasPrefix(p, bearerProtocolPrefix) {
			keep = append(keep, p)
		}
	}
	if len(keep) == len(offered) {
		return // no token
	}
	h.Del("Sec-WebSocket-Protocol")
	if len(keep) > 0 {
		h.Set("Sec-WebSocket-Protocol", strings.Join(keep, ", "))
	}
}

// watchSubprotocol is the protocol the answer names: the first the client
// offers that is not its token (a browser fails a connection whose answer
// names none of those it offered).
func watchSubprotocol(r *http.Request) string {
	for _, p := range websocketProtocols(r.Header) {
		if !strings.HasPrefix(p, bearerProtocolPrefix) {
			return p
		}
	}
	return ""
}

// streamSink writes newline-delimited JSON on a chunked response.
type streamSink struct {
	c  *gin.Context
	rc *http.ResponseController
}

func (s *streamSink) write(data []byte) error {
	for len(data) > 0 {
		n := min(len(data), watchWriteChunk)
		_ = s.rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
		if _, err := s.c.Writer.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (s *streamSink) flush() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
	return s.rc.Flush()
}

// close leaves the end of the stream its time to be written.
func (s *streamSink) close() { _ = s.rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout)) }

// socketSink writes each event as a text message.
type socketSink struct {
	conn   *websocket.Conn
	cancel context.CancelFunc
}

func (s *socketSink) write(data []byte) error {
	w, err := s.conn.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), watchWriteChunk)
		_ = s.conn.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return w.Close()
}

func (s *socketSink) flush() error { return nil }

func (s *socketSink) close() {
	_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	s.conn.Close()
	s.cancel()
}
