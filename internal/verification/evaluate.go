package verification

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/parser"
	"k8s.io/client-go/util/jsonpath"
)

// Phase is the outcome of a measurement, a metric or a run, as Argo Rollouts names them.
type Phase string

const (
	Successful   Phase = "Successful"
	Failed       Phase = "Failed"
	Inconclusive Phase = "Inconclusive"
	// Error is a measurement that could not be taken or evaluated (Prometheus unreachable, a
	// condition that does not apply to the result). A metric ends in Error after more than
	// consecutiveErrorLimit of them in a row; addonops treats a run that ends in Error as
	// Inconclusive: nobody knows whether the version is good.
	Error   Phase = "Error"
	Running Phase = "Running"
)

// worse reports whether a is a worse outcome than b: Failed, then Error, then Inconclusive, then
// Successful (Argo Rollouts' order).
func worse(a, b Phase) bool {
	rank := map[Phase]int{Successful: 1, Inconclusive: 2, Error: 3, Failed: 4}
	return rank[a] > rank[b]
}

// conditionEnv is the environment of a condition: result, and Argo Rollouts' helper functions.
func conditionEnv(result any) map[string]any {
	return map[string]any{
		"result":  result,
		"asInt":   asInt,
		"asFloat": asFloat,
		"isNaN":   math.IsNaN,
		"isInf":   func(f float64) bool { return math.IsInf(f, 0) },
		"isNil": func(v any) bool {
			return v == nil || reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil()
		},
		"default": func(v, d any) any {
			if v == nil {
				return d
			}
			return v
		},
	}
}

// CompileCondition checks a condition's syntax; types are checked at each measurement, when the
// result's type is known (a vector, a scalar, a JSON value).
func CompileCondition(condition string) error {
	_, err := parser.Parse(condition)
	return err
}

// EvalCondition evaluates a condition on a measurement's result.
func EvalCondition(result any, condition string) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("evaluating %q: %v", condition, r)
		}
	}()
	env := conditionEnv(result)
	program, err := expr.Compile(condition, expr.Env(env), expr.AsBool())
	if err != nil {
		return false, err
	}
	out, err := expr.Run(program, env)
	if err != nil {
		return false, err
	}
	b, isBool := out.(bool)
	if !isBool {
		return false, fmt.Errorf("condition %q: want a boolean, got %T", condition, out)
	}
	return b, nil
}

// EvaluateResult judges one measurement's result by the metric's conditions, as Argo Rollouts
// does: no condition passes; a success condition alone fails when false; a failure condition alone
// passes when false; both false is inconclusive; a condition that cannot be evaluated is an error.
func EvaluateResult(result any, m Metric) (Phase, error) {
	success, fail := false, false
	var err error
	if m.SuccessCondition != "" {
		if success, err = EvalCondition(result, m.SuccessCondition); err != nil {
			return Error, err
		}
	}
	if m.FailureCondition != "" {
		if fail, err = EvalCondition(result, m.FailureCondition); err != nil {
			return Error, err
		}
	}
	switch {
	case m.SuccessCondition == "" && m.FailureCondition == "":
		return Successful, nil
	case m.SuccessCondition != "" && m.FailureCondition == "":
		fail = !success
	case m.SuccessCondition == "" && m.FailureCondition != "":
		success = !fail
	}
	switch {
	case fail:
		return Failed, nil
	case !success:
		return Inconclusive, nil
	}
	return Successful, nil
}

func asInt(in any) int64 {
	switch v := in.(type) {
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(err)
		}
		return n
	case float64:
		return int64(v)
	case int:
		return int64(v)
	case int64:
		return v
	}
	panic(fmt.Sprintf("asInt: cannot convert %T", in))
}

func asFloat(in any) float64 {
	switch v := in.(type) {
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			panic(err)
		}
		return f
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	panic(fmt.Sprintf("asFloat: cannot convert %T", in))
}

func newJSONPath(path string) (*jsonpath.JSONPath, error) {
	jp := jsonpath.New("web")
	if err := jp.Parse(path); err != nil {
		return nil, err
	}
	return jp, nil
}

// JSONPathValue selects the value at path in a decoded JSON document, as Argo Rollouts' web
// provider does: the first value found, and its JSON text for messages.
func JSONPathValue(doc any, path string) (any, error) {
	jp, err := newJSONPath(path)
	if err != nil {
		return nil, err
	}
	results, err := jp.FindResults(doc)
	if err != nil {
		return nil, err
	}
	for _, rs := range results {
		for _, r := range rs {
			return r.Interface(), nil
		}
	}
	var buf bytes.Buffer
	_ = jp.Execute(&buf, doc)
	return nil, fmt.Errorf("jsonPath %s selects nothing in the response", path)
}
