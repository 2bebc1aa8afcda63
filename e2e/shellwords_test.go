package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// shellWords splits a command line as a POSIX shell does for the README's commands: words
// separated by spaces, single and double quotes removed (no escapes, no expansions).
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, c := range line {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\' || c == '$' || c == '`':
			return nil, fmt.Errorf("%q: unsupported shell syntax %q", line, c)
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unterminated quote", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`kubectl get a/b -o jsonpath='{.x[?(@.y=="z")].r}'`, []string{"kubectl", "get", "a/b", "-o", `jsonpath={.x[?(@.y=="z")].r}`}},
		{`kubectl wait a/b --for=jsonpath='{.s}'=False`, []string{"kubectl", "wait", "a/b", "--for=jsonpath={.s}=False"}},
		{`k "a b"  c`, []string{"k", "a b", "c"}},
		{`k ''`, []string{"k", ""}},
	} {
		if got, err := shellWords(tc.line); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
	for _, bad := range []string{`k 'a`, `k $HOME`, "k `x`", `k a\ b`} {
		if got, err := shellWords(bad); err == nil {
			t.Errorf("%s: %q, want an error", bad, got)
		}
	}
}
