package api

// Table is meta.k8s.io/v1 Table: rows of cells as kubectl get prints them,
// served when a client asks for it in Accept
// (application/json;as=Table;v=v1;g=meta.k8s.io).
type Table struct {
	TypeMeta          `json:",inline"`
	ListMeta          `json:"metadata"`
	ColumnDefinitions []TableColumnDefinition `json:"columnDefinitions"`
	Rows              []TableRow              `json:"rows"`
}

// TableColumnDefinition: Priority 0 columns always show, 1 with -o wide.
type TableColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Priority    int32  `json:"priority"`
}

type TableRow struct {
	Cells []any `json:"cells"`
	// Object is the row's object's metadata (PartialObjectMetadata).
	Object any `json:"object,omitempty"`
}

// PartialObjectMetadata is an object reduced to its metadata.
type PartialObjectMetadata struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
}
