package mkctl

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// Document is one object read from a manifest.
type Document struct {
	// Source is the file it came from ("-" for stdin).
	Source string
	// Index is its place in the file (1-based), Line the line it starts on.
	Index    int
	Line     int
	Resource api.Resource
	Object   api.Object
}

// where names the document in messages.
func (d Document) where() string {
	return fmt.Sprintf("%s: document %d (line %d)", d.Source, d.Index, d.Line)
}

// manifestExts are the files a directory contributes.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ReadManifests reads every object of the files, directories (their
// *.yaml, *.yml and *.json files, in sorted order) or stdin ("-") named by
// paths. Any malformed document fails the whole read, so nothing is applied
// from a half-understood set.
func ReadManifests(paths []string, stdin io.Reader) ([]Document, error) {
	var docs []Document
	for _, p := range paths {
		files, err := expandPath(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			var data []byte
			if f == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(f)
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", f, err)
			}
			ds, err := ParseManifest(f, data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, ds...)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no objects found in %s", strings.Join(paths, ", "))
	}
	return docs, nil
}

func expandPath(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("the path %q does not exist", p)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("reading directory %s: %w", p, err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && manifestExts[strings.ToLower(filepath.Ext(e.Name()))] {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("directory %s has no .yaml, .yml or .json files", p)
	}
	return files, nil
}

// chunk is one document's text and the line it starts on.
type chunk struct {
	text []byte
	line int
}

// ParseManifest decodes the documents of one file: YAML separated by
// "---" lines, or a stream of JSON values. A List (or KindList) contributes
// its items.
func ParseManifest(source string, data []byte) ([]Document, error) {
	var chunks []chunk
	var err error
	if isJSON(source, data) {
		chunks, err = splitJSON(source, data)
	} else {
		chunks, err = splitYAML(source, data)
	}
	if err != nil {
		return nil, err
	}
	var docs []Document
	for i, c := range chunks {
		d := Document{Source: source, Index: i + 1, Line: c.line}
		objs, err := decodeChunk(c.text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.where(), err)
		}
		for _, o := range objs {
			d.Resource, d.Object = o.res, o.obj
			docs = append(docs, d)
		}
	}
	return docs, nil
}

func isJSON(source string, data []byte) bool {
	if strings.EqualFold(filepath.Ext(source), ".json") {
		return true
	}
	t := bytes.TrimSpace(data)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// splitJSON cuts a stream of JSON values into documents.
func splitJSON(source string, data []byte) ([]chunk, error) {
	var out []chunk
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		line := 1 + bytes.Count(data[:start], []byte("\n"))
		if err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				line = 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n"))
			}
			return nil, fmt.Errorf("%s: line %d: malformed JSON: %s", source, line, strings.TrimPrefix(err.Error(), "json: "))
		}
		// Skip the whitespace before the value so the line is its own.
		for start < int64(len(data)) && isSpace(data[start]) {
			if data[start] == '\n' {
				line++
			}
			start++
		}
		out = append(out, chunk{text: raw, line: line})
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

var (
	yamlSeparator = regexp.MustCompile(`^---(\s.*)?$`)
	yamlErrLine   = regexp.MustCompile(`line (\d+)`)
)

// splitYAML cuts YAML at "---" lines and turns each document into JSON;
// documents holding only comments are dropped.
func splitYAML(source string, data []byte) ([]chunk, error) {
	var out []chunk
	var cur bytes.Buffer
	start, lineNo := 1, 0
	flush := func() error {
		text := cur.Bytes()
		if !onlyComments(text) {
			j, err := yaml.YAMLToJSON(text)
			if err != nil {
				// Report lines of the file, not of the document.
				msg := yamlErrLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
					n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
					return "line " + strconv.Itoa(n+start-1)
				})
				msg = strings.TrimPrefix(strings.TrimPrefix(msg, "error converting YAML to JSON: "), "yaml: ")
				return fmt.Errorf("%s: malformed YAML: %s", source, msg)
			}
			if !bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
				out = append(out, chunk{text: j, line: start + leadingBlankLines(text)})
			}
		}
		cur.Reset()
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if yamlSeparator.MatchString(strings.TrimRight(line, "\r")) {
			if err := flush(); err != nil {
				return nil, err
			}
			start = lineNo + 1
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func onlyComments(text []byte) bool {
	for _, l := range strings.Split(string(text), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// leadingBlankLines counts the comment and blank lines before the content,
// so a document's line is the line of its first key.
func leadingBlankLines(text []byte) int {
	n := 0
	for _, l := range strings.Split(string(text), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			break
		}
		n++
	}
	return n
}

type decoded struct {
	res api.Resource
	obj api.Object
}

// decodeChunk turns one JSON document into objects of their kinds.
func decodeChunk(data []byte) ([]decoded, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("malformed document: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object with apiVersion, kind and metadata, got %s", jsonTypeName(doc))
	}
	return decodeMap(m)
}

func decodeMap(m map[string]any) ([]decoded, error) {
	kind, _ := m["kind"].(string)
	if kind == "" {
		return nil, errors.New("kind is missing")
	}
	if items, ok := m["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		var out []decoded
		for i, it := range items {
			im, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("items[%d]: expected an object, got %s", i, jsonTypeName(it))
			}
			ds, err := decodeMap(im)
			if err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			out = append(out, ds...)
		}
		return out, nil
	}
	res, ok := api.LookupResource(kind)
	if !ok || res.Kind != kind {
		return nil, fmt.Errorf("unknown kind %q (known kinds: %s)", kind, knownKinds())
	}
	v, _ := m["apiVersion"].(string)
	view := v == api.FuncGroupVersion && res.Served().Group == api.FuncGroup
	if v != "" && res.Kind != "Func" && v != res.GroupVersion() && !view {
		return nil, fmt.Errorf("apiVersion %q is not the version of %s (want %q)", v, kind, res.GroupVersion())
	}
	normalizeIntOrString(m, "")
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	obj := res.New()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, decodeError(err, m)
	}
	if view {
		// The kubectl view of the function kinds: stored in the reference form.
		if err := fromView(obj); err != nil {
			return nil, err
		}
	}
	if err := prepare(obj); err != nil {
		return nil, err
	}
	return []decoded{{res: res, obj: obj}}, nil
}

func knownKinds() string {
	kinds := make([]string, 0, len(api.Resources))
	for _, r := range api.Resources {
		kinds = append(kinds, r.Kind)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "an object"
}

// decodeError names the field a strict decode tripped on.
func decodeError(err error, doc map[string]any) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("%s: expected %s, got a %s", typ.Field, typ.Type.String(), typ.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		// The decoder names the field but not where it is.
		if unq, err := strconv.Unquote(name); err == nil {
			if path := findKey(doc, unq, ""); path != "" {
				return fmt.Errorf("unknown field %q", path)
			}
		}
	}
	return errors.New(msg)
}

// findKey returns the path of a key named key in v, preferring keys of a
// map over those nested below it.
func findKey(v any, key, path string) string {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if k == key {
				return p
			}
		}
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if found := findKey(t[k], key, p); found != "" {
				return found
			}
		}
	case []any:
		for i, c := range t {
			if found := findKey(c, key, fmt.Sprintf("%s[%d]", path, i)); found != "" {
				return found
			}
		}
	}
	return ""
}

// normalizeIntOrString writes ports that Kubernetes lets be a number or a
// name (targetPort, a probe's httpGet.port) as the strings minik8s stores.
func normalizeIntOrString(v any, parent string) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if n, ok := c.(json.Number); ok && (k == "targetPort" || (parent == "httpGet" && k == "port")) {
				t[k] = n.String()
				continue
			}
			normalizeIntOrString(c, k)
		}
	case []any:
		for _, c := range t {
			normalizeIntOrString(c, parent)
		}
	}
}

// fromView turns an object of the minik8s.io/v1 view into the reference
// form the /api/v1 paths take.
func fromView(obj api.Object) error {
	if f, ok := obj.(*api.Func); ok {
		return function.FromView(f)
	}
	obj.GetTypeMeta().APIVersion = ""
	return nil
}

// prepare fills what a manifest may leave out and mkctl can infer.
func prepare(obj api.Object) error {
	meta := obj.GetObjectMeta()
	if f, ok := obj.(*api.Func); ok {
		// The reference design names a function in spec.name; either will do.
		if meta.Name == "" {
			meta.Name = f.Spec.Name
		}
		if f.Spec.Name == "" {
			f.Spec.Name = meta.Name
		}
		f.Spec.Function = EncodeSource(f.Spec.Function)
		f.Spec.PreRun = EncodeSource(f.Spec.PreRun)
	}
	if meta.Name == "" {
		return errors.New("metadata.name is required")
	}
	return nil
}

// EncodeSource base64-encodes function source written as plain text and
// keeps source that already is base64. Python and shell source always holds
// characters outside the base64 alphabet (spaces, newlines, ':', '('), so
// text made only of that alphabet that decodes is taken as encoded.
func EncodeSource(s string) string {
	if s == "" || IsBase64(s) {
		return s
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// IsBase64 reports whether s is standard, padded base64 and nothing else.
func IsBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}
