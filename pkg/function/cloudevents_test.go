package function

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func TestReadEvent(t *testing.T) {
	plain := api.FuncEvent{ID: "id-1", Source: "/api/funcs/f", Type: EventTypeCall}
	binary := http.Header{}
	binary.Set("Ce-Specversion", "1.0")
	binary.Set("Ce-Id", "e-7")
	binary.Set("Ce-Source", "/orders")
	binary.Set("Ce-Type", "com.example.order")
	binary.Set("Ce-Subject", "o-1")
	binary.Set("Ce-Time", "2026-11-26T10:00:00Z")
	binary.Set("Ce-Tenant", "acme")
	binary.Set("Content-Type", "application/json")
	structured := http.Header{"Content-Type": {ContentTypeCloudEvent}}
	badBinary := http.Header{}
	badBinary.Set("Ce-Specversion", "1.0")
	badBinary.Set("Ce-Id", "e-8")
	oddVersion := binary.Clone()
	oddVersion.Set("Ce-Specversion", "0.3x")
	v03 := binary.Clone()
	v03.Set("Ce-Specversion", "0.3")
	for _, tc := range []struct {
		name      string
		header    http.Header
		body      string
		wantData  string
		want      api.FuncEvent
		wantError string
	}{
		{name: "plain", header: http.Header{"Content-Type": {"text/plain"}}, body: "hi", wantData: "hi",
			want: api.FuncEvent{SpecVersion: "1.0", ID: "id-1", Source: "/api/funcs/f", Type: EventTypeCall, DataContentType: "text/plain"}},
		{name: "binary", header: binary, body: `{"n":1}`, wantData: `{"n":1}`,
			want: api.FuncEvent{SpecVersion: "1.0", ID: "e-7", Source: "/orders", Type: "com.example.order", Subject: "o-1",
				Time: "2026-11-26T10:00:00Z", DataContentType: "application/json", Extensions: map[string]string{"tenant": "acme"}}},
		{name: "structured", header: structured,
			body:     `{"specversion":"1.0","id":"s-1","source":"/s","type":"t.s","datacontenttype":"application/json","data":{"n":2}}`,
			wantData: `{"n":2}`,
			want:     api.FuncEvent{SpecVersion: "1.0", ID: "s-1", Source: "/s", Type: "t.s", DataContentType: "application/json"}},
		{name: "structured text", header: structured,
			body:     `{"specversion":"1.0","id":"s-2","source":"/s","type":"t.s","datacontenttype":"text/plain","data":"hello"}`,
			wantData: `hello`,
			want:     api.FuncEvent{SpecVersion: "1.0", ID: "s-2", Source: "/s", Type: "t.s", DataContentType: "text/plain"}},
		{name: "binary 0.3, read as 1.0", header: v03, body: `{"n":1}`, wantData: `{"n":1}`,
			want: api.FuncEvent{SpecVersion: "1.0", ID: "e-7", Source: "/orders", Type: "com.example.order", Subject: "o-1",
				Time: "2026-11-26T10:00:00Z", DataContentType: "application/json", Extensions: map[string]string{"tenant": "acme"}}},
		{name: "structured 0.3 base64, read as 1.0", header: structured,
			body:     `{"specversion":"0.3","id":"s-3","source":"/s","type":"t.s","datacontenttype":"text/plain","datacontentencoding":"base64","data":"aGVsbG8="}`,
			wantData: `hello`,
			want:     api.FuncEvent{SpecVersion: "1.0", ID: "s-3", Source: "/s", Type: "t.s", DataContentType: "text/plain"}},
		{name: "binary of an unknown version", header: oddVersion, body: "x", wantError: `"0.3x" is not a CloudEvents version`},
		{name: "structured of an unknown version", header: structured,
			body: `{"specversion":"0.3x","id":"s-4","source":"/s","type":"t.s"}`, wantError: "not a valid CloudEvent"},
		{name: "binary without source", header: badBinary, body: "x", wantError: "source"},
		{name: "structured not JSON", header: structured, body: "{", wantError: "not a valid CloudEvent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, data, err := ReadEvent(tc.header, []byte(tc.body), plain)
			if tc.wantError != "" {
				if !errors.Is(err, errdefs.ErrBadRequest) || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want a bad request about %s", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(ev)
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) || string(data) != tc.wantData {
				t.Errorf("got %s data %q\nwant %s data %q", got, data, want, tc.wantData)
			}
		})
	}
}

func TestRecordRequestLeavesCredentialsOut(t *testing.T) {
	r := httptest.NewRequest("POST", "/hook?a=1&a=2&access_token=abc&key=k", nil)
	r.Header.Set("Authorization", "Bearer secret")
	r.Header.Set("Cookie", "s=1")
	r.Header.Set("X-Gitlab-Token", "hook-secret")
	r.Header.Set("X-Api-Key", "k1")
	r.Header.Set("Ce-Id", "x")
	r.Header.Set("X-Trace", "t1")
	ev := &api.FuncEvent{}
	RecordRequest(ev, r)
	if ev.Method != "POST" || ev.Path != "/hook" || len(ev.Query["a"]) != 2 || ev.Headers["X-Trace"] != "t1" {
		t.Errorf("recorded %+v", ev)
	}
	for _, k := range []string{"Authorization", "Cookie", "X-Gitlab-Token", "X-Api-Key"} {
		if v := ev.Headers[k]; v != "[redacted]" {
			t.Errorf("header %s recorded as %q", k, v)
		}
	}
	for _, k := range []string{"access_token", "key"} {
		if v := ev.Query[k]; len(v) != 1 || v[0] != "[redacted]" {
			t.Errorf("query %s recorded as %q", k, v)
		}
	}
	if _, ok := ev.Headers["Ce-Id"]; ok {
		t.Error("a CloudEvents header recorded: it is an attribute")
	}
}

func TestOutcomeEvent(t *testing.T) {
	done := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		status   api.FuncInstanceStatus
		wantType string
		wantData string
	}{
		{"json result", api.FuncInstanceStatus{Phase: api.InstanceSucceeded, Result: `{"ok":true}`, CompletionTime: &done}, EventTypeResult, `{"ok":true}`},
		{"text result", api.FuncInstanceStatus{Phase: api.InstanceSucceeded, Result: "plain", CompletionTime: &done}, EventTypeResult, `"plain"`},
		{"error", api.FuncInstanceStatus{Phase: api.InstanceFailed, Error: "boom", CompletionTime: &done,
			Failure: &api.FuncError{Message: "boom", Type: "ValueError", Trace: "Traceback"}}, EventTypeError,
			`{"message":"boom","type":"ValueError","trace":"Traceback"}`},
		{"platform error", api.FuncInstanceStatus{Phase: api.InstanceFailed, Error: "no pod", CompletionTime: &done}, EventTypeError,
			`{"message":"no pod","type":"CallFailed","trace":""}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "i-1"}, Status: tc.status}
			b, err := OutcomeEvent(inst, "/api/funcs/f")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if string(got["type"]) != `"`+tc.wantType+`"` || string(got["data"]) != tc.wantData ||
				string(got["specversion"]) != `"1.0"` || string(got["subject"]) != `"i-1"` || string(got["source"]) != `"/api/funcs/f"` {
				t.Errorf("event %s", b)
			}
		})
	}
}

func TestAcceptsEvent(t *testing.T) {
	for accept, want := range map[string]bool{
		"": false, "application/json": false, ContentTypeCloudEvent: true,
		"text/plain, application/cloudevents+json; q=0.9": true,
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Accept", accept)
		if got := AcceptsEvent(r); got != want {
			t.Errorf("Accept %q: %v, want %v", accept, got, want)
		}
	}
}

func TestASCIIJSON(t *testing.T) {
	in := map[string]string{"k": "héllo 🎉\n"}
	s := ASCIIJSON(in)
	for _, r := range s {
		if r >= 0x80 {
			t.Fatalf("non-ASCII in %q", s)
		}
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(s), &out); err != nil || out["k"] != in["k"] {
		t.Errorf("round trip %q: %v %q", s, err, out["k"])
	}
}

func TestCEValueEncoding(t *testing.T) {
	for in, want := range map[string]string{"plain/id-1": "plain/id-1", "a b": "a%20b", "x\ny": "x%0Ay", "é": "%C3%A9", `"%`: "%22%25"} {
		if got := ceValue(in); got != want {
			t.Errorf("ceValue(%q) = %q, want %q", in, got, want)
		}
	}
}
