package apiserver

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"minik8s/pkg/rbac"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// uiRoot is where the dashboard is served.
const uiRoot = "/ui"

// The dashboard: static files embedded in the binary, no build step. The
// page reads the cluster through the API (lists, then watches over
// websockets) with the token it signs in with; the files themselves hold
// no data and are served to anyone.
//
//go:embed ui
var uiFiles embed.FS

// uiFile is one embedded file, read once.
type uiFile struct {
	data        []byte
	etag        string
	contentType string
}

// uiPolicy keeps the page to its own origin: no inline script or style,
// nothing loaded from elsewhere, never framed.
const uiPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func loadUIFiles() map[string]uiFile {
	files := map[string]uiFile{}
	_ = fs.WalkDir(uiFiles, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := uiFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		files[strings.TrimPrefix(p, "ui/")] = uiFile{data: data, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, contentType: ct}
		return nil
	})
	return files
}

func (s *Server) uiRoutes(r *router) {
	files := loadUIFiles()
	r.handle(http.MethodGet, uiRoot, nonResource(), func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, uiRoot+"/") })
	r.handle(http.MethodGet, uiRoot+"/*file", nonResource(), func(c *gin.Context) {
		name := strings.TrimPrefix(c.Param("file"), "/")
		if name == "session" {
			s.uiSession(c)
			return
		}
		if name == "" {
			name = "index.html"
		}
		f, ok := files[name]
		if !ok {
			fail(c, notFoundPath(c.Request.URL.Path))
			return
		}
		h := c.Writer.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("ETag", f.etag)
		// Revalidated on every load: a new binary serves new files.
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", uiPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		http.ServeContent(c.Writer, c.Request, name, time.Time{}, bytes.NewReader(f.data))
	})
}

// uiSession tells the page who it reads the cluster as: on the secure port
// without a token it must sign in; the local port is the admin.
type uiSession struct {
	SignIn bool     `json:"signIn"`
	User   string   `json:"user,omitempty"`
	Groups []string `json:"groups,omitempty"`
	Local  bool     `json:"local"`
}

func (s *Server) uiSession(c *gin.Context) {
	u := rbac.UserOf(c.Request.Context())
	c.Header("Cache-Control", "no-store")
	if u.Name == rbac.AnonymousUser.Name {
		c.JSON(http.StatusOK, uiSession{SignIn: true})
		return
	}
	c.JSON(http.StatusOK, uiSession{User: u.Name, Groups: u.Groups, Local: fromLocalPort(c.Request)})
}
