// Package quantity parses Kubernetes resource quantities: "500m" and "2" CPUs,
// "64Mi" and "1G" bytes. The parsing and arithmetic are
// k8s.io/apimachinery's resource.Quantity; this package adds what minik8s
// wants on top: negative quantities and values that do not fit an int64 are
// errors rather than silently wrapped.
package quantity

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// fits reports whether v, counted in units of 10^scale, is at most
// math.MaxInt64 of them. The float comparison settles a huge value
// ("1e100000") before the exact one would expand it; apimachinery caps a
// binary-suffixed value ("20Ei") at math.MaxInt64 when it parses it, so
// reaching that cap counts as not fitting.
func fits(v resource.Quantity, scale resource.Scale) bool {
	if v.AsApproximateFloat64() >= 1e19*math.Pow10(int(scale)) {
		return false
	}
	if v.Format == resource.BinarySI && v.CmpInt64(math.MaxInt64) >= 0 {
		return false
	}
	return v.Cmp(*resource.NewScaledQuantity(math.MaxInt64, scale)) <= 0
}

func parse(q string) (resource.Quantity, error) {
	v, err := resource.ParseQuantity(strings.TrimSpace(q))
	if err != nil {
		if strings.TrimSpace(q) == "" {
			return v, fmt.Errorf("quantity is empty")
		}
		return v, fmt.Errorf("%q is not a quantity (want a number with an optional suffix such as 500m, 64Mi, 1G)", q)
	}
	if v.Sign() < 0 {
		return v, fmt.Errorf("%q is negative", q)
	}
	return v, nil
}

// Parse returns the value of q in base units (cores or bytes), approximately.
func Parse(q string) (float64, error) {
	v, err := parse(q)
	if err != nil {
		return 0, err
	}
	f := v.AsApproximateFloat64()
	if math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is too large", q)
	}
	return f, nil
}

// MilliCPU parses a CPU quantity into thousandths of a core, rounding a
// fraction of a millicore up as Kubernetes does. A quantity of more than
// math.MaxInt64 millicores is an error.
func MilliCPU(q string) (int64, error) {
	v, err := parse(q)
	if err != nil {
		return 0, err
	}
	if !fits(v, resource.Milli) {
		return 0, fmt.Errorf("%q is too large: more than %d millicores", q, int64(math.MaxInt64))
	}
	return v.MilliValue(), nil
}

// Bytes parses a memory quantity into bytes, rounding a fraction of a byte
// up. A quantity of more than math.MaxInt64 bytes is an error.
func Bytes(q string) (int64, error) {
	v, err := parse(q)
	if err != nil {
		return 0, err
	}
	if !fits(v, 0) {
		return 0, fmt.Errorf("%q is too large: more than %d (a 64-bit integer)", q, int64(math.MaxInt64))
	}
	return v.Value(), nil
}

// FormatMilliCPU writes thousandths of a core the way Kubernetes does
// (500m, 2, 1k).
func FormatMilliCPU(m int64) string {
	return resource.NewMilliQuantity(m, resource.DecimalSI).String()
}

// FormatBytes writes bytes in the largest binary unit that divides them
// (64Mi, 3Gi, 1Ti), or as a plain number (1000, not apimachinery's 1k).
func FormatBytes(b int64) string {
	if b == 0 || b%1024 != 0 {
		return strconv.FormatInt(b, 10)
	}
	return resource.NewQuantity(b, resource.BinarySI).String()
}
