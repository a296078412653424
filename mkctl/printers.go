package mkctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"minik8s/pkg/api"
	"minik8s/pkg/printers"
)

// TablePrinter prints objects of one kind as aligned columns. It remembers
// the widths it used so rows printed later (watch events) line up.
type TablePrinter struct {
	res           api.Resource
	cols          printers.Columns
	wide          bool
	withNamespace bool
	showLabels    bool
	// eventColumn prefixes each row with the watch event type.
	eventColumn bool
	// kindPrefix names objects kind/name, as in a table of several kinds.
	kindPrefix bool
	widths     []int
}

// NewTablePrinter returns the table printer of res.
func NewTablePrinter(res api.Resource, wide, withNamespace, showLabels bool) *TablePrinter {
	return &TablePrinter{res: res, cols: printers.For(res.Name), wide: wide, withNamespace: withNamespace && res.Namespaced, showLabels: showLabels}
}

func (p *TablePrinter) header() []string {
	var h []string
	if p.eventColumn {
		h = append(h, "EVENT")
	}
	if p.withNamespace {
		h = append(h, "NAMESPACE")
	}
	h = append(h, p.cols.Headers...)
	if p.wide {
		h = append(h, p.cols.Wide...)
	}
	if p.showLabels {
		h = append(h, "LABELS")
	}
	return h
}

func (p *TablePrinter) cells(event api.EventType, obj api.Object, now time.Time) []string {
	var r []string
	if p.eventColumn {
		r = append(r, string(event))
	}
	if p.withNamespace {
		r = append(r, obj.GetObjectMeta().Namespace)
	}
	cells, wide := p.cols.Row(obj, now)
	if p.kindPrefix && len(cells) > 0 && len(p.cols.Headers) > 0 && p.cols.Headers[0] == "NAME" {
		cells[0] = kindName(p.res, cells[0])
	}
	r = append(r, cells...)
	if p.wide {
		r = append(r, wide...)
	}
	if p.showLabels {
		r = append(r, printers.OrNone(printers.MapString(obj.GetObjectMeta().Labels)))
	}
	return r
}

// PrintTable prints the header and a row per object.
func (p *TablePrinter) PrintTable(w io.Writer, objs []api.Object, now time.Time) error {
	rows := [][]string{p.header()}
	for _, o := range objs {
		rows = append(rows, p.cells(api.Added, o, now))
	}
	p.widths = nil
	if p.eventColumn {
		// Room for the widest event type, so later rows line up.
		p.widths = []int{len(api.Modified)}
	}
	for _, r := range rows {
		p.grow(r)
	}
	for _, r := range rows {
		if _, err := io.WriteString(w, p.format(r)); err != nil {
			return err
		}
	}
	return nil
}

// PrintRow prints one more row, as wide as the table before it or wider.
func (p *TablePrinter) PrintRow(w io.Writer, event api.EventType, obj api.Object, now time.Time) error {
	r := p.cells(event, obj, now)
	p.grow(r)
	_, err := io.WriteString(w, p.format(r))
	return err
}

func (p *TablePrinter) grow(r []string) {
	for len(p.widths) < len(r) {
		p.widths = append(p.widths, 0)
	}
	for i, c := range r {
		p.widths[i] = max(p.widths[i], len(c))
	}
}

// format pads every cell but the last to its column's width plus three
// spaces, as kubectl's tab writer does.
func (p *TablePrinter) format(r []string) string {
	var b strings.Builder
	for i, c := range r {
		if i == len(r)-1 {
			b.WriteString(c)
			break
		}
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", p.widths[i]-len(c)+3))
	}
	b.WriteByte('\n')
	return b.String()
}

// PrintObject writes one object as JSON (indented) or YAML.
func PrintObject(w io.Writer, format string, obj any) error {
	data, err := json.MarshalIndent(obj, "", "    ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// listOf wraps objects as the KindList the apiserver serves.
func listOf(res api.Resource, objs []api.Object, rv string) any {
	items := objs
	if items == nil {
		items = []api.Object{}
	}
	return struct {
		api.TypeMeta `json:",inline"`
		Metadata     api.ListMeta `json:"metadata"`
		Items        []api.Object `json:"items"`
	}{api.TypeMeta{APIVersion: res.GroupVersion(), Kind: res.Kind + "List"}, api.ListMeta{ResourceVersion: rv}, items}
}
