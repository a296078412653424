package images

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// aptEntry is one source of apt: a mirror and its suites.
type aptEntry struct {
	URI    string
	Suites []string
}

// aptSource picks the Debian mirror and release of the machine from its apt
// sources (sources.list, sources.list.d/*.list and *.sources): the first
// binary source with a plain release (not -security, -updates, ...). Empty
// strings when there is none: debootstrap then uses its defaults.
func (b *Builder) aptSource() (mirror, suite string) {
	dir := b.SourcesDir
	if dir == "" {
		dir = "/etc/apt"
	}
	var entries []aptEntry
	if data, err := os.ReadFile(filepath.Join(dir, "sources.list")); err == nil {
		entries = append(entries, parseOneLine(string(data))...)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sources.list.d", "*"))
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(f, ".list"):
			entries = append(entries, parseOneLine(string(data))...)
		case strings.HasSuffix(f, ".sources"):
			entries = append(entries, parseDeb822(string(data))...)
		}
	}
	for _, e := range entries {
		for _, s := range e.Suites {
			if s != "" && !strings.Contains(s, "-") && !strings.Contains(s, "/") {
				return e.URI, s
			}
		}
	}
	return "", ""
}

// parseOneLine reads "deb [options] uri suite component..." lines.
func parseOneLine(text string) []aptEntry {
	var out []aptEntry
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		if strings.HasPrefix(fields[0], "[") {
			for len(fields) > 0 && !strings.HasSuffix(fields[0], "]") {
				fields = fields[1:]
			}
			if len(fields) > 0 {
				fields = fields[1:]
			}
		}
		if len(fields) < 2 {
			continue
		}
		out = append(out, aptEntry{URI: fields[0], Suites: []string{fields[1]}})
	}
	return out
}

// parseDeb822 reads the stanzas of a .sources file.
func parseDeb822(text string) []aptEntry {
	var out []aptEntry
	for _, stanza := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.HasPrefix(line, " ") {
				continue
			}
			fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
		if strings.EqualFold(fields["enabled"], "no") {
			continue
		}
		if !containsWord(fields["types"], "deb") {
			continue
		}
		uris := strings.Fields(fields["uris"])
		if len(uris) == 0 {
			continue
		}
		out = append(out, aptEntry{URI: uris[0], Suites: strings.Fields(fields["suites"])})
	}
	return out
}

func containsWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}
