package quantity

import (
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in    string
		milli int64
		bytes int64
		err   bool
		// milliErr: only MilliCPU fails (the value fits in bytes, not in millicores).
		milliErr bool
	}{
		{in: "500m", milli: 500, bytes: 1},
		{in: "2", milli: 2000, bytes: 2},
		{in: "0.5", milli: 500, bytes: 1},
		{in: "64Mi", milli: 64 << 20 * 1000, bytes: 64 << 20},
		{in: "1Gi", milli: 1 << 30 * 1000, bytes: 1 << 30},
		{in: "1G", milli: 1e9 * 1000, bytes: 1e9},
		{in: "128k", milli: 128000 * 1000, bytes: 128000},
		{in: "", err: true},
		{in: "lots", err: true},
		{in: "64Zi", err: true},
		{in: "-1", err: true},
		{in: "0x10", err: true},
		{in: "1e3", milli: 1e6, bytes: 1000},
		{in: " 2 ", milli: 2000, bytes: 2},
		{in: "0.1m", milli: 1, bytes: 1},
		{in: "7Ei", milli: 0, bytes: 7 << 60, err: false, milliErr: true},
		{in: "9223372036854775807", bytes: math.MaxInt64, milliErr: true},
		{in: "9223372036854775807m", milli: math.MaxInt64, bytes: 9223372036854776},
		{in: "1e19", err: true},
		{in: "20Ei", err: true},
		{in: "8Ei", err: true},
		{in: "9223372036854775808", err: true},
		{in: "1e400", err: true},
		{in: "-1e19", err: true},
		{in: "1.5.2", err: true},
		{in: "5 Mi", err: true},
	}
	for _, tc := range tests {
		m, err := MilliCPU(tc.in)
		b, berr := Bytes(tc.in)
		if tc.err {
			if err == nil || berr == nil {
				t.Errorf("%q: want an error, got %d %d", tc.in, m, b)
			}
			continue
		}
		if tc.milliErr {
			if err == nil {
				t.Errorf("MilliCPU(%q) = %d, want an error", tc.in, m)
			}
			if berr != nil || b != tc.bytes {
				t.Errorf("Bytes(%q) = %d, %v, want %d", tc.in, b, berr, tc.bytes)
			}
			continue
		}
		if err != nil || berr != nil {
			t.Errorf("%q: %v %v", tc.in, err, berr)
			continue
		}
		if m != tc.milli || b != tc.bytes {
			t.Errorf("%q = %dm %dB, want %dm %dB", tc.in, m, b, tc.milli, tc.bytes)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{FormatMilliCPU(500), "500m"}, {FormatMilliCPU(2000), "2"},
		{FormatMilliCPU(1500), "1500m"}, {FormatMilliCPU(0), "0"},
		{FormatBytes(64 << 20), "64Mi"}, {FormatBytes(3 << 30), "3Gi"}, {FormatBytes(1000), "1000"}, {FormatBytes(0), "0"},
		{FormatBytes(1536), "1536"}, {FormatBytes(1 << 40), "1Ti"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// A value that does not fit an int64 is an error naming the value, never a
// wrapped or saturated number.
func TestOverflow(t *testing.T) {
	tests := []struct {
		name string
		f    func(string) (int64, error)
		in   string
	}{
		{"MilliCPU", MilliCPU, "1e19"},
		{"MilliCPU", MilliCPU, "9223372036854776"},
		{"MilliCPU", MilliCPU, "10Ei"},
		{"Bytes", Bytes, "20Ei"},
		{"Bytes", Bytes, "1e19"},
		{"Bytes", Bytes, "9223372036854775808"},
		{"Bytes", Bytes, "10000P"},
		{"Bytes", Bytes, "1e10000000"}, // settled without expanding 10^10000000
		{"MilliCPU", MilliCPU, "1e10000000"},
	}
	for _, tc := range tests {
		v, err := tc.f(tc.in)
		if err == nil {
			t.Errorf("%s(%q) = %d, want an overflow error", tc.name, tc.in, v)
			continue
		}
		if !strings.Contains(err.Error(), `"`+tc.in+`"`) || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%s(%q): error %q does not name the value as too large", tc.name, tc.in, err)
		}
	}
	if _, err := Parse("1e400"); err == nil {
		t.Error(`Parse("1e400") succeeded`)
	}
}
