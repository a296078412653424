package api

// The discovery documents kubectl and client-go read first (/version,
// /api, /apis, /api/v1, /apis/GROUP/VERSION), spelled as Kubernetes'
// meta/v1 and version packages spell them.

// VersionInfo is /version.
type VersionInfo struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// APIVersions is /api: the core group's versions.
type APIVersions struct {
	TypeMeta                   `json:",inline"`
	Versions                   []string                    `json:"versions"`
	ServerAddressByClientCIDRs []ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs"`
}

type ServerAddressByClientCIDR struct {
	ClientCIDR    string `json:"clientCIDR"`
	ServerAddress string `json:"serverAddress"`
}

// APIGroupList is /apis: the named groups.
type APIGroupList struct {
	TypeMeta `json:",inline"`
	Groups   []APIGroup `json:"groups"`
}

type APIGroup struct {
	TypeMeta         `json:",inline"`
	Name             string                     `json:"name"`
	Versions         []GroupVersionForDiscovery `json:"versions"`
	PreferredVersion GroupVersionForDiscovery   `json:"preferredVersion"`
}

type GroupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

// APIResourceList is /api/v1 or /apis/GROUP/VERSION: the kinds of one
// group version, with their subresources as "pods/status".
type APIResourceList struct {
	TypeMeta     `json:",inline"`
	GroupVersion string        `json:"groupVersion"`
	Resources    []APIResource `json:"resources"`
}

type APIResource struct {
	Name         string `json:"name"`
	SingularName string `json:"singularName"`
	Namespaced   bool   `json:"namespaced"`
	// Group and Version, when set, are the kind's own (a subresource of
	// another group: replicasets/scale is autoscaling/v1 Scale).
	Group      string   `json:"group,omitempty"`
	Version    string   `json:"version,omitempty"`
	Kind       string   `json:"kind"`
	Verbs      []string `json:"verbs"`
	ShortNames []string `json:"shortNames,omitempty"`
	Categories []string `json:"categories,omitempty"`
}
