package quantity

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in    string
		milli int64
		bytes int64
		err   bool
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
		{FormatBytes(64 << 20), "64Mi"}, {FormatBytes(3 << 30), "3Gi"}, {FormatBytes(1000), "1000"}, {FormatBytes(0), "0"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
