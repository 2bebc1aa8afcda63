package childproc

// TB is the part of testing.TB that the harnesses' ForTest functions (localhub's aside) use;
// *testing.T and *testing.B satisfy it. An interface keeps the testing package out of binaries
// that only call Start (the demo).
type TB interface {
	Helper()
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// LogTails prints, for a failed test, the last n lines of each log and where they are kept.
func LogTails(t TB, what, dir string, logs []string, n int) {
	for _, log := range logs {
		t.Logf("last lines of %s:\n%s", log, Tail(log, n))
	}
	t.Logf("%s logs kept in %s", what, dir)
}
