// Package mdblock reads the fenced code blocks of markdown files, the marker comment that
// classifies each one, and the commands of shell and console blocks. It is pure (text in, blocks
// out) so that the README test's reading of the documentation is itself table-tested.
//
// A marker is an HTML comment, invisible to the reader, on the last non-blank line before a
// block's opening fence:
//
//	<!-- readme-test: VERB ARG... -->
//
// ARGs are words or double-quoted strings ("a reason with spaces").
package mdblock

import (
	"fmt"
	"regexp"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	File   string // as given to Extract
	Line   int    // line of the opening fence, from 1
	Lang   string // first word of the info string ("sh", "yaml", ""), lower case
	Indent int    // columns of the opening fence (a block inside a list item)
	// Content is the block's text with the fence's indentation removed from every line, ending in
	// a newline unless the block is empty.
	Content string
	Marker  *Marker // nil when no marker precedes the block
}

// Where is "FILE:LINE", how every message names a block.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Marker is a block's classification.
type Marker struct {
	Line int
	Verb string
	Args []string
}

var (
	fenceRE  = regexp.MustCompile("^( *)(`{3,}|~{3,})(.*)$")
	markerRE = regexp.MustCompile(`^\s*<!--\s*readme-test:(.*?)-->\s*$`)
)

// Extract returns the fenced blocks of a markdown file, in order. A marker comment that is not
// followed by a block (only blank lines between), a malformed marker and an unterminated block are
// errors, so a typo cannot leave a block silently unclassified.
func Extract(file string, src string) ([]Block, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var blocks []Block
	var pending *Marker
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := markerRE.FindStringSubmatch(line); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: marker not followed by a code block (the next marker is on line %d)", file, pending.Line, i+1)
			}
			words, err := Words(m[1])
			if err != nil || len(words) == 0 {
				return nil, fmt.Errorf("%s:%d: malformed marker %q: write <!-- readme-test: VERB ARG... --> (%v)", file, i+1, strings.TrimSpace(line), err)
			}
			pending = &Marker{Line: i + 1, Verb: words[0], Args: words[1:]}
			continue
		}
		if strings.Contains(line, "readme-test:") && strings.Contains(line, "<!--") {
			return nil, fmt.Errorf("%s:%d: a readme-test marker must be alone on its line: <!-- readme-test: VERB ARG... -->", file, i+1)
		}
		f := fenceRE.FindStringSubmatch(line)
		if f == nil {
			if pending != nil && strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("%s:%d: marker not followed by a code block (line %d comes first): put it on the line before the ``` fence", file, pending.Line, i+1)
			}
			continue
		}
		indent, fence, info := len(f[1]), f[2], strings.TrimSpace(f[3])
		if fence[0] == '`' && strings.Contains(info, "`") {
			continue // an inline code span at the start of a line, not a fence
		}
		b := Block{File: file, Line: i + 1, Indent: indent, Marker: pending}
		pending = nil
		if w := strings.Fields(info); len(w) > 0 {
			b.Lang = strings.ToLower(w[0])
		}
		var content []string
		closed := false
		for i++; i < len(lines); i++ {
			l := lines[i]
			if c := fenceRE.FindStringSubmatch(l); c != nil && len(c[1]) <= indent+3 && c[2][0] == fence[0] && len(c[2]) >= len(fence) && strings.TrimSpace(c[3]) == "" {
				closed = true
				break
			}
			content = append(content, dedent(l, indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: code block is never closed", file, b.Line)
		}
		if len(content) > 0 {
			b.Content = strings.Join(content, "\n") + "\n"
		}
		blocks = append(blocks, b)
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: marker not followed by a code block", file, pending.Line)
	}
	return blocks, nil
}

// dedent removes up to n leading spaces, as CommonMark does for the content of an indented fence.
func dedent(l string, n int) string {
	for n > 0 && strings.HasPrefix(l, " ") {
		l, n = l[1:], n-1
	}
	return l
}

// Words splits s into space-separated words; double quotes group spaces into a word and are
// removed (key="a b" is the word key=a b); \" and \\ escape inside them.
func Words(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		case c == '"':
			quoted, in = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// Command is one command of a shell or console block.
type Command struct {
	Line int    // line in the markdown file where the command starts
	Text string // the command as the shell reads it: continuation lines joined with their "\\\n" kept
	// Output is what a console block shows after the command, up to the next prompt, ending in a
	// newline; empty for sh blocks and commands shown without output.
	Output string
}

// Commands returns the commands of a sh/bash/shell block (every line that is not blank or a
// comment starts one; a line ending in a backslash continues on the next) or of a console block
// (lines starting "$ " are commands, the lines after them their output).
func Commands(b Block) []Command {
	lines := strings.Split(strings.TrimSuffix(b.Content, "\n"), "\n")
	if b.Content == "" {
		return nil
	}
	console := b.Lang == "console"
	var cmds []Command
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if console {
			if !strings.HasPrefix(l, "$ ") {
				if len(cmds) > 0 {
					cmds[len(cmds)-1].Output += l + "\n"
				}
				continue
			}
			l = strings.TrimPrefix(l, "$ ")
		} else if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := Command{Line: b.Line + 1 + i, Text: l}
		for strings.HasSuffix(c.Text, "\\") && i+1 < len(lines) {
			i++
			c.Text += "\n" + lines[i]
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// StripComment returns a one-line shell command without a trailing comment: from the first " #"
// outside quotes. Continuation backslash-newlines become spaces.
func StripComment(cmd string) string {
	cmd = strings.ReplaceAll(cmd, "\\\n", " ")
	var quote byte
	for i := 0; i < len(cmd); i++ {
		switch c := cmd[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || cmd[i-1] == ' ' || cmd[i-1] == '\t'):
			return strings.TrimSpace(cmd[:i])
		}
	}
	return strings.TrimSpace(cmd)
}
