// Package quantity parses Kubernetes resource quantities: "500m" and "2" CPUs,
// "64Mi" and "1G" bytes.
package quantity

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var suffixes = []struct {
	suffix string
	factor float64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

// Parse returns the value of q in base units (cores or bytes).
func Parse(q string) (float64, error) {
	s := strings.TrimSpace(q)
	if s == "" {
		return 0, fmt.Errorf("quantity is empty")
	}
	factor := 1.0
	for _, sf := range suffixes {
		if strings.HasSuffix(s, sf.suffix) {
			factor = sf.factor
			s = strings.TrimSuffix(s, sf.suffix)
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(s, "xXpP_") {
		return 0, fmt.Errorf("%q is not a quantity (want a number with an optional suffix such as 500m, 64Mi, 1G)", q)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative", q)
	}
	return v * factor, nil
}

// MilliCPU parses a CPU quantity into thousandths of a core.
func MilliCPU(q string) (int64, error) {
	v, err := Parse(q)
	if err != nil {
		return 0, err
	}
	return int64(math.Round(v * 1000)), nil
}

// Bytes parses a memory quantity into bytes.
func Bytes(q string) (int64, error) {
	v, err := Parse(q)
	if err != nil {
		return 0, err
	}
	return int64(math.Ceil(v)), nil
}

// FormatMilliCPU writes thousandths of a core the way Kubernetes does.
func FormatMilliCPU(m int64) string {
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	return strconv.FormatInt(m, 10) + "m"
}

// FormatBytes writes bytes in the largest binary unit that divides them.
func FormatBytes(b int64) string {
	for _, u := range []struct {
		s string
		f int64
	}{{"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if b != 0 && b%u.f == 0 {
			return strconv.FormatInt(b/u.f, 10) + u.s
		}
	}
	return strconv.FormatInt(b, 10)
}
