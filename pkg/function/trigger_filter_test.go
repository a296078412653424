package function

import (
	"testing"

	"minik8s/pkg/api"
)

func TestPassesFilters(t *testing.T) {
	ev := &api.FuncEvent{SpecVersion: "1.0", ID: "1", Source: "/shop/eu", Type: "com.shop.order.created",
		Extensions: map[string]string{"region": "eu-west"}}
	for _, tc := range []struct {
		name    string
		filters []api.TriggerFilter
		want    bool
	}{
		{"none", nil, true},
		{"exact type", []api.TriggerFilter{{Exact: map[string]string{"type": "com.shop.order.created"}}}, true},
		{"exact type differs", []api.TriggerFilter{{Exact: map[string]string{"type": "com.shop.order"}}}, false},
		{"prefix type", []api.TriggerFilter{{Prefix: map[string]string{"type": "com.shop.order."}}}, true},
		{"extension prefix", []api.TriggerFilter{{Prefix: map[string]string{"region": "eu-"}}}, true},
		{"extension missing", []api.TriggerFilter{{Exact: map[string]string{"tenant": ""}}}, false},
		{"subject missing", []api.TriggerFilter{{Prefix: map[string]string{"subject": ""}}}, false},
		{"every filter must pass", []api.TriggerFilter{{Prefix: map[string]string{"source": "/shop"}}, {Exact: map[string]string{"region": "us"}}}, false},
		{"every attribute of one filter", []api.TriggerFilter{{Exact: map[string]string{"source": "/shop/eu", "id": "1"}}}, true},
	} {
		if got := PassesFilters(tc.filters, ev); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
