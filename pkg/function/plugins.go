package function

import (
	"encoding/base64"
	"regexp"

	"minik8s/pkg/api"
)

// BuiltinPluginVersions are the versions of the plugins every Python
// runtime has, as minik8s_plugins.py declares them (a funcserver test
// holds the two together).
var BuiltinPluginVersions = map[string]string{"tracing": "1", "metrics": "1", "log-context": "1"}

// pluginVersionLine is a user plugin's `VERSION = "2.1"` (or 2) at the
// start of a line, which the runtime reads as the module's VERSION.
var pluginVersionLine = regexp.MustCompile(`(?m)^VERSION\s*=\s*(?:"([^"\n]*)"|'([^'\n]*)'|([0-9][0-9.]*))\s*(?:#.*)?$`)

// PluginVersion is the version of the plugin name of spec as its pods
// report it in traces: a built-in's, or the VERSION its module assigns
// ("0" when it assigns none; "" when the version is computed, known only
// when the module runs).
func PluginVersion(spec *api.FuncSpec, name string) string {
	if v, ok := BuiltinPluginVersions[name]; ok {
		return v
	}
	src, err := base64.StdEncoding.DecodeString(spec.Files[name+".py"])
	if err != nil {
		return ""
	}
	m := pluginVersionLine.FindSubmatch(src)
	if m == nil {
		if regexp.MustCompile(`(?m)^VERSION\b`).Match(src) {
			return ""
		}
		return "0"
	}
	for _, g := range m[1:] {
		if len(g) > 0 {
			return string(g)
		}
	}
	return ""
}
