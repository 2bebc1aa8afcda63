package krmfn

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Main is the entry point of a function binary: `NAME [--config FILE] [FILE...]`.
// With no FILE it reads stdin, which may be a ResourceList (kustomize, kpt) or plain YAML.
func Main(name, usage string, fn ProcessFunc) {
	os.Exit(Run(name, usage, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, fn))
}

// MainStream is Main for a StreamFunc. It lets ExecuteStream limit the process's memory.
func MainStream(name, usage string, fn StreamFunc) {
	os.Exit(run(name, usage, os.Args[1:], os.Stdin, os.Stderr, func(in Input) int {
		in.LimitMemory = true
		return ExecuteStream(name, in, fn, os.Stdout, os.Stderr)
	}))
}

// Run is Main with explicit arguments and streams, for tests.
func Run(name, usage string, args []string, stdin io.Reader, stdout, stderr io.Writer, fn ProcessFunc) int {
	return run(name, usage, args, stdin, stderr, func(in Input) int { return Execute(name, in, fn, stdout, stderr) })
}

// RunStream is Run for a StreamFunc.
func RunStream(name, usage string, args []string, stdin io.Reader, stdout, stderr io.Writer, fn StreamFunc) int {
	return run(name, usage, args, stdin, stderr, func(in Input) int { return ExecuteStream(name, in, fn, stdout, stderr) })
}

func run(name, usage string, args []string, stdin io.Reader, stderr io.Writer, execute func(Input) int) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var configPath OnceString
	fs.Var(&configPath, "config", "functionConfig `FILE` for plain YAML input (a ResourceList carries its own)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nUsage: %s [--config FILE] [FILE...]\n", usage, name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	in := Input{Stdin: stdin, Files: fs.Args()}
	if configPath.Value != "" {
		cfg, err := ReadConfig(configPath.Value)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		in.FunctionConfig = cfg
	}
	return execute(in)
}

// ReadConfig reads a functionConfig file, which must hold exactly one object: a second document
// would otherwise be ignored without a word. The object goes through the strict reader's key check.
func ReadConfig(path string) (*yaml.RNode, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading functionConfig: %w", err)
	}
	if err := checkText(data, "functionConfig "+path); err != nil {
		return nil, err
	}
	data = withoutCR(data)
	secs, err := sections(data, "parsing functionConfig "+path)
	if err != nil {
		return nil, err
	}
	var docs []*yaml.RNode
	var lines []int
	for _, sec := range secs {
		p := place{source: "functionConfig " + path, item: -1, line: sec.line}
		read, err := (&kio.ByteReader{Reader: bytes.NewReader(sec.text), OmitReaderAnnotations: true, DisableUnwrapping: true}).Read()
		if err != nil {
			return nil, fmt.Errorf("parsing functionConfig %s: %w", path, absoluteLines(err, sec.line))
		}
		if err := checkOneDocument(sec.text, p); err != nil {
			return nil, err
		}
		docs = append(docs, read...)
		for range read {
			lines = append(lines, sec.line)
		}
	}
	switch {
	case len(docs) == 0:
		return nil, fmt.Errorf("functionConfig %s holds no object: give it one (e.g. kind: ConfigMap with data), or leave --config out", path)
	case len(docs) > 1:
		return nil, fmt.Errorf("functionConfig %s holds %d documents, but a functionConfig is exactly one object: keep one", path, len(docs))
	case !isObject(docs[0]):
		return nil, fmt.Errorf("functionConfig %s is %s, but a functionConfig is an object (a YAML mapping)", path, describeNode(docs[0]))
	}
	if err := checkTree(docs[0].YNode(), nil, place{source: "functionConfig " + path, item: -1, line: lines[0]}); err != nil {
		return nil, err
	}
	return docs[0], nil
}

// OnceString is a flag.Value for a flag that takes one string and may be given once: the flag
// package lets the last of a repeated flag win, which drops the first without a word. Its Value
// is the default until the flag is given.
type OnceString struct {
	Value string
	set   bool
}

func (o *OnceString) String() string {
	if o == nil {
		return ""
	}
	return o.Value
}

// Set takes the flag's value, the first time only.
func (o *OnceString) Set(v string) error {
	if o.set {
		return fmt.Errorf("given twice (first %q), but it takes one value: give it once", o.Value)
	}
	o.Value, o.set = v, true
	return nil
}

// IsSet tells whether the flag was given.
func (o *OnceString) IsSet() bool { return o.set }
