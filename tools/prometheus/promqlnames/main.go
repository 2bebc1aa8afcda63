// Command promqlnames parses PromQL expressions with Prometheus' own parser and prints the metric
// names each one selects. The main module's tests use it to check that every dashboard query and
// alert expression parses and names only metrics the controller exports; it lives in this tools
// module so Prometheus' dependency graph never touches the product's go.mod.
//
// Input (stdin): a JSON array of expressions. Output (stdout): a JSON array, one object per
// expression in the same order: {"expr": ..., "metrics": [...]} or {"expr": ..., "error": ...}.
// It exits 0 when it could read its input, whatever the expressions: the caller reports them.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Expr    string   `json:"expr"`
	Metrics []string `json:"metrics,omitempty"`
	Error   string   `json:"error,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promqlnames: reading a JSON array of PromQL expressions from stdin:", err)
		os.Exit(2)
	}
	out := make([]result, 0, len(exprs))
	for _, e := range exprs {
		out = append(out, inspect(e))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promqlnames:", err)
		os.Exit(2)
	}
}

func inspect(expr string) result {
	r := result{Expr: expr}
	ast, err := parser.ParseExpr(expr)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	names := map[string]bool{}
	var problem error
	// A MatrixSelector's child is its VectorSelector, so visiting vector selectors covers both.
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			// {__name__="x"} selects by matcher; a regular expression on the name selects metrics
			// nobody can check against an export, so it is refused.
			for _, m := range vs.LabelMatchers {
				if m.Name != labels.MetricName {
					continue
				}
				if m.Type != labels.MatchEqual {
					problem = fmt.Errorf("selector %s matches metric names by %s; name each metric", vs, m.Type)
					continue
				}
				name = m.Value
			}
		}
		if name == "" && problem == nil {
			problem = fmt.Errorf("selector %s names no metric", vs)
		}
		if name != "" {
			names[name] = true
		}
		return nil
	})
	if problem != nil {
		r.Error = problem.Error()
		return r
	}
	for n := range names {
		r.Metrics = append(r.Metrics, n)
	}
	sort.Strings(r.Metrics)
	return r
}
