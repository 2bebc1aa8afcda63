package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flag      int
		flagGiven bool
		gogc      string
		want      int
		source    string
		apply     bool
		err       string
	}{
		{name: "default", flag: defaultGCPercent, want: 30, source: "default", apply: true},
		{name: "GOGC", flag: defaultGCPercent, gogc: "200", want: 200, source: "GOGC"},
		{name: "GOGC off", flag: defaultGCPercent, gogc: "off", source: "GOGC"},
		{name: "flag", flag: 80, flagGiven: true, want: 80, source: "--gc-percent", apply: true},
		{name: "flag over GOGC", flag: 80, flagGiven: true, gogc: "200", want: 80, source: "--gc-percent", apply: true},
		{name: "flag 0", flag: 0, flagGiven: true, err: "--gc-percent=0: want 1 or more"},
		{name: "flag -1", flag: -1, flagGiven: true, gogc: "100", err: "--gc-percent=-1: want 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, source, apply, err := gcPercent(tc.flag, tc.flagGiven, tc.gogc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || source != tc.source || apply != tc.apply {
				t.Errorf("gcPercent = %d, %q, apply %v, %v; want %d, %q, apply %v", got, source, apply, err, tc.want, tc.source, tc.apply)
			}
		})
	}
}

func TestBadGCPercent(t *testing.T) {
	err := run(context.Background(), []string{"--gc-percent=0"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--gc-percent=0: want 1 or more") {
		t.Errorf("got %v", err)
	}
}
