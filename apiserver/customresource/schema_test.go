package customresource

import (
	"encoding/json"
	"slices"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"minik8s/pkg/api"
)

// TestSchemaUnknown: the fields strict field validation refuses are those
// pruning drops, named by their paths; a preserved subtree has none.
func TestSchemaUnknown(t *testing.T) {
	yes := true
	schema := &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
				"cronSpec": {Type: "string"},
				"extra":    {Type: "object", XPreserveUnknownFields: &yes},
			}},
		}}}
	s, err := NewSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, obj string
		want      []string
	}{
		{"declared", `{"spec":{"cronSpec":"* * * * *"}}`, nil},
		{"unknown under spec", `{"spec":{"cronSpec":"x","image":"y"}}`, []string{"spec.image"}},
		{"unknown at the top", `{"spec":{},"foo":1}`, []string{"foo"}},
		{"preserved", `{"spec":{"extra":{"any":{"thing":1}}}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o api.CustomObject
			if err := json.Unmarshal([]byte(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a"},`+tc.obj[1:]), &o); err != nil {
				t.Fatal(err)
			}
			got := s.Unknown(&o)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Unknown = %q, want %q", got, tc.want)
			}
		})
	}
}
