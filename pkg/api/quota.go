package api

// LimitRange (v1) bounds and defaults what each container (or pod) of a
// namespace asks for: pods are given its defaults when created, and
// refused (403) past its bounds.
type LimitRange struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       LimitRangeSpec `json:"spec,omitempty"`
}

type LimitRangeSpec struct {
	Limits []LimitRangeItem `json:"limits"`
}

// The kinds of limit a LimitRange item sets.
const (
	LimitTypeContainer = "Container"
	LimitTypePod       = "Pod"
	// LimitTypePersistentVolumeClaim bounds claims' storage.
	LimitTypePersistentVolumeClaim = "PersistentVolumeClaim"
)

type LimitRangeItem struct {
	Type                 string       `json:"type"`
	Max                  ResourceList `json:"max,omitempty"`
	Min                  ResourceList `json:"min,omitempty"`
	Default              ResourceList `json:"default,omitempty"`
	DefaultRequest       ResourceList `json:"defaultRequest,omitempty"`
	MaxLimitRequestRatio ResourceList `json:"maxLimitRequestRatio,omitempty"`
}

type LimitRangeList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []LimitRange `json:"items"`
}

// ResourceQuota (v1) caps what a namespace holds: object counts (pods,
// services, count/deployments.apps) and the CPU and memory its pods ask
// for. A create past it is refused (403 naming the quota); its status
// says what is used.
type ResourceQuota struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       ResourceQuotaSpec   `json:"spec,omitempty"`
	Status     ResourceQuotaStatus `json:"status,omitempty"`
}

type ResourceQuotaSpec struct {
	Hard ResourceList `json:"hard,omitempty"`
	// Scopes narrow the pods counted: Terminating, NotTerminating,
	// BestEffort, NotBestEffort.
	Scopes        []string       `json:"scopes,omitempty"`
	ScopeSelector *ScopeSelector `json:"scopeSelector,omitempty"`
}

type ScopeSelector struct {
	MatchExpressions []ScopedResourceSelectorRequirement `json:"matchExpressions,omitempty"`
}

type ScopedResourceSelectorRequirement struct {
	ScopeName string   `json:"scopeName"`
	Operator  string   `json:"operator"`
	Values    []string `json:"values,omitempty"`
}

// The scopes of a quota minik8s counts by.
const (
	QuotaScopeTerminating    = "Terminating"
	QuotaScopeNotTerminating = "NotTerminating"
	QuotaScopeBestEffort     = "BestEffort"
	QuotaScopeNotBestEffort  = "NotBestEffort"
)

type ResourceQuotaStatus struct {
	Hard ResourceList `json:"hard,omitempty"`
	Used ResourceList `json:"used,omitempty"`
}

type ResourceQuotaList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []ResourceQuota `json:"items"`
}
