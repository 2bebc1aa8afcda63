package exampletest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseREADME(t *testing.T) {
	const build = "go tool kustomize build --enable-alpha-plugins --enable-exec"
	for _, tc := range []struct {
		name    string
		readme  string
		want    []Command // README, Line and Text are filled in by the test
		wantErr string
	}{
		{
			name: "commands, setup lines and other blocks",
			readme: "# x\n\n```sh\nmake build\nexport PATH=\"$PWD/bin:$PATH\"\n\n" + build + " a/b > a/b/expected/hub.yaml\n" +
				"addon-template render --cluster c1 a/b/expected/hub.yaml > a/b/expected/c1.yaml\n```\n\n" +
				"```\nkubectl apply -f whatever\n```\n" +
				"<!-- readme-test: run hub -->\n```sh\nkubectl apply -f whatever\n```\n",
			want: []Command{
				{Line: 7, Args: strings.Fields(build + " a/b"), Output: "a/b/expected/hub.yaml"},
				{Line: 8, Args: strings.Fields("addon-template render --cluster c1 a/b/expected/hub.yaml"), Output: "a/b/expected/c1.yaml"},
			},
		},
		{name: "no output file", readme: "```sh\n" + build + " a/b\n```\n", wantErr: `must end in "> FILE"`},
		{name: "missing --enable-exec", readme: "```sh\ngo tool kustomize build --enable-alpha-plugins a/b > x.yaml\n```\n", wantErr: "a build must be written"},
		{name: "two directories", readme: "```sh\n" + build + " a b > x.yaml\n```\n", wantErr: "a build must be written"},
		{name: "kubectl", readme: "```sh\nkubectl kustomize a/b > x.yaml\n```\n", wantErr: `unknown program "kubectl"`},
		{name: "unterminated block", readme: "```sh\nmake build\n", wantErr: "never closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "README.md"), []byte(tc.readme), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ParseREADME(root, "README.md")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(tc.readme, "\n")
			for i := range tc.want {
				tc.want[i].README = "README.md"
				tc.want[i].Text = lines[tc.want[i].Line-1]
			}
			if !slices.EqualFunc(got, tc.want, func(a, b Command) bool {
				return a.README == b.README && a.Line == b.Line && a.Text == b.Text && slices.Equal(a.Args, b.Args) && a.Output == b.Output
			}) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if d := got[0].BuildDir(); d != "a/b" {
				t.Errorf("BuildDir of the build: %q, want a/b", d)
			}
			if d := got[1].BuildDir(); d != "" {
				t.Errorf("BuildDir of the render: %q, want none", d)
			}
		})
	}
}

func TestContains(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want any
		path      string
		ok        bool
	}{
		{"server adds fields", map[string]any{"a": "x", "b": "y"}, map[string]any{"a": "x"}, "", true},
		{"pruned field", map[string]any{"a": "x"}, map[string]any{"a": "x", "b": "y"}, ".b", false},
		{"changed value", map[string]any{"a": []any{"x"}}, map[string]any{"a": []any{"z"}}, ".a[0]", false},
		{"list length", map[string]any{"a": []any{"x", "y"}}, map[string]any{"a": []any{"x"}}, ".a", false},
		{"number from the server", map[string]any{"n": int64(1)}, map[string]any{"n": float64(1)}, "", true},
		{"different number", map[string]any{"n": int64(2)}, map[string]any{"n": float64(1)}, ".n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, ok := contains(tc.got, tc.want, "")
			if ok != tc.ok || (!ok && path != tc.path) {
				t.Errorf("contains = %q, %v; want %q, %v", path, ok, tc.path, tc.ok)
			}
		})
	}
}
