package gitrepo

import (
	"testing"
)

func TestPathsStayInTheWorkTree(t *testing.T) {
	r, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../x", "/etc/x", ".git/config", "a/../../x", ".git"} {
		if err := r.WriteFile(p, []byte("x")); err == nil {
			t.Errorf("WriteFile(%q) succeeded; want a refusal", p)
		}
		if err := r.Remove(p); err == nil {
			t.Errorf("Remove(%q) succeeded; want a refusal", p)
		}
	}
	if err := Step(r, "../outside"); err == nil {
		t.Error("Step(../outside) succeeded; want a refusal")
	}
}
