package render

import (
	"testing"
	"time"
)

func TestFormatElapsed(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {400 * time.Millisecond, "0s"}, {1500 * time.Millisecond, "2s"}, {59 * time.Second, "59s"},
		{59*time.Second + 600*time.Millisecond, "1m00s"}, {83 * time.Second, "1m23s"}, {10*time.Minute + 5*time.Second, "10m05s"},
		{59*time.Minute + 59*time.Second, "59m59s"}, {time.Hour, "1h00m"}, {3*time.Hour + 7*time.Minute + 59*time.Second, "3h07m"},
		{125 * time.Hour, "125h00m"},
	} {
		if got := formatElapsed(tt.d); got != tt.want {
			t.Errorf("formatElapsed(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
