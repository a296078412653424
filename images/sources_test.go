package images

import "testing"

func TestAptSource(t *testing.T) {
	tests := []struct {
		dir, mirror, suite string
	}{
		{"testdata/deb822", "http://mirror.example/debian", "trixie"},
		{"testdata/oneline", "http://mirror.example/debian", "bookworm"},
		{"testdata/none", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			b := Builder{SourcesDir: tt.dir}
			mirror, suite := b.aptSource()
			if mirror != tt.mirror || suite != tt.suite {
				t.Errorf("aptSource() = %q, %q; want %q, %q", mirror, suite, tt.mirror, tt.suite)
			}
		})
	}
}
