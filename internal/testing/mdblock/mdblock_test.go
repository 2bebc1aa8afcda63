package mdblock

import (
	"reflect"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []Block
		err       string
	}{
		{
			name: "plain and marked blocks",
			src:  "# T\n\n```sh\nmake build\n```\n\n<!-- readme-test: skip \"needs a registry\" -->\n```yaml\na: 1\n```\n",
			want: []Block{
				{File: "R.md", Line: 3, Lang: "sh", Content: "make build\n"},
				{File: "R.md", Line: 8, Lang: "yaml", Content: "a: 1\n", Marker: &Marker{Line: 7, Verb: "skip", Args: []string{"needs a registry"}}},
			},
		},
		{
			name: "indented block in a list item, blank line after the marker, no language",
			src:  "- item:\n\n  <!-- readme-test: run hub x=\"a b\" -->\n\n  ```\n  x:\n    y: 1\n  ```\n",
			want: []Block{{File: "R.md", Line: 5, Indent: 2, Content: "x:\n  y: 1\n", Marker: &Marker{Line: 3, Verb: "run", Args: []string{"hub", "x=a b"}}}},
		},
		{
			name: "a longer fence holds a shorter one; tildes; empty block",
			src:  "````md\n```sh\nx\n```\n````\n~~~\n~~~\n",
			want: []Block{{File: "R.md", Line: 1, Lang: "md", Content: "```sh\nx\n```\n"}, {File: "R.md", Line: 6}},
		},
		{name: "unterminated", src: "```sh\nx\n", err: "R.md:1: code block is never closed"},
		{name: "marker before prose", src: "<!-- readme-test: run -->\ntext\n```sh\nx\n```\n", err: "R.md:1: marker not followed by a code block"},
		{name: "marker at the end", src: "```sh\nx\n```\n<!-- readme-test: run -->\n", err: "R.md:4: marker not followed by a code block"},
		{name: "two markers", src: "<!-- readme-test: run -->\n<!-- readme-test: skip \"x\" -->\n```sh\nx\n```\n", err: "R.md:1: marker not followed"},
		{name: "empty marker", src: "<!-- readme-test: -->\n```sh\nx\n```\n", err: "R.md:1: malformed marker"},
		{name: "unterminated quote", src: "<!-- readme-test: skip \"x -->\n```sh\nx\n```\n", err: "R.md:1: malformed marker"},
		{name: "marker not alone", src: "text <!-- readme-test: run -->\n```sh\nx\n```\n", err: "R.md:1: a readme-test marker must be alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Extract("R.md", tc.src)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block Block
		want  []Command
	}{
		{
			name:  "sh: comments, blank lines, continuations",
			block: Block{Line: 10, Lang: "sh", Content: "# setup\nmake build   # first\n\nbin/x --a 1 \\\n    --b 2 FILE\nkpt fn eval\n"},
			want: []Command{
				{Line: 12, Text: "make build   # first"},
				{Line: 14, Text: "bin/x --a 1 \\\n    --b 2 FILE"},
				{Line: 16, Text: "kpt fn eval"},
			},
		},
		{
			name:  "console: prompts and their output",
			block: Block{Line: 1, Lang: "console", Content: "$ addonops pause h\nh: paused\n  x: y\n$ addonops abort h \\\n  --auto=true\n$ addonops history h\nA  B\n"},
			want: []Command{
				{Line: 2, Text: "addonops pause h", Output: "h: paused\n  x: y\n"},
				{Line: 5, Text: "addonops abort h \\\n  --auto=true"},
				{Line: 7, Text: "addonops history h", Output: "A  B\n"},
			},
		},
		{name: "empty", block: Block{Lang: "sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Commands(tc.block); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestStripComment(t *testing.T) {
	for in, want := range map[string]string{
		"make demo   # the main job":              "make demo",
		`kubectl get x -o jsonpath='{.a#b}'  # c`: `kubectl get x -o jsonpath='{.a#b}'`,
		"bin/x --a 1 \\\n    --b 2":               "bin/x --a 1      --b 2",
		`echo "a # b"`:                            `echo "a # b"`,
		"git rev-parse HEAD#x":                    "git rev-parse HEAD#x",
		"# only a comment":                        "",
	} {
		if got := StripComment(in); got != want {
			t.Errorf("StripComment(%q) = %q, want %q", in, got, want)
		}
	}
}
