// Package health holds addonops' health checks for the OCM kinds GitOps tools cannot judge on
// their own (ClusterManagementAddOn, ManagedClusterAddOn, ManifestWork): Argo CD Lua scripts in
// argocd/resource_customizations, laid out as in Argo CD's own repository, and Flux
// healthCheckExprs (CEL) in flux/. This package runs both the way Argo CD and Flux run them, so
// the tests can check the scripts and expressions against the same testdata, hand-written and
// captured from the controller, and against the status command's verdicts
// (internal/rolloutview). README.md documents how to install them.
package health

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// ArgoStatus is what a health.lua script returns, as Argo CD reads it.
type ArgoStatus struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// argoCodes are the health codes Argo CD accepts from a script (gitops-engine pkg/health); any
// other status becomes Unknown with argoInvalidStatus.
var argoCodes = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true}

const argoInvalidStatus = "Lua returned an invalid health status"

// argoTimeout is how long Argo CD lets a script run.
const argoTimeout = time.Second

// RunArgoScript runs a health.lua script on obj the way Argo CD's application controller does
// (util/lua VM.ExecuteHealthLua): a fresh gopher-lua state with only the package, base and table
// libraries and an os table holding time and date, plus every standard library when openLibs is
// set (Argo CD's built-in scripts and argocd-cm's useOpenLibs); the object, converted value by
// value, in the global `obj`; one second to run; the returned table read as {status, message}.
// Custom scripts in argocd-cm run with openLibs false, which is why the scripts use no string or
// math functions.
func RunArgoScript(script string, obj map[string]any, openLibs bool) (ArgoStatus, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, openSafeOs},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return ArgoStatus{}, fmt.Errorf("opening Lua library %q: %w", lib.name, err)
		}
	}
	l.PreloadModule(lua.OsLibName, func(l *lua.LState) int {
		l.Push(l.SetFuncs(l.NewTable(), safeOsFuncs))
		return 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), argoTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return ArgoStatus{}, fmt.Errorf("running the health script: %w", err)
	}
	ret := l.Get(-1)
	tbl, ok := ret.(*lua.LTable)
	if !ok {
		return ArgoStatus{}, fmt.Errorf("expect table output from Lua script, not %s", ret.Type())
	}
	var hs ArgoStatus
	if err := json.Unmarshal([]byte(tableJSON(tbl)), &hs); err != nil {
		return ArgoStatus{}, fmt.Errorf("reading the script's result: %w", err)
	}
	if !argoCodes[hs.Status] {
		return ArgoStatus{Status: "Unknown", Message: argoInvalidStatus}, nil
	}
	return hs, nil
}

// tableJSON encodes the string fields of a result table as JSON; Argo CD encodes the whole table
// and unmarshals it into {status, message}, so other fields do not matter.
func tableJSON(t *lua.LTable) string {
	out := map[string]any{}
	t.ForEach(func(k, v lua.LValue) {
		if ks, ok := k.(lua.LString); ok {
			switch v := v.(type) {
			case lua.LString:
				out[string(ks)] = string(v)
			case lua.LNumber:
				out[string(ks)] = float64(v)
			case lua.LBool:
				out[string(ks)] = bool(v)
			}
		}
	})
	b, _ := json.Marshal(out)
	return string(b)
}

// openSafeOs registers the os functions Argo CD gives scripts (time and date only: nothing that
// exits, reads files or runs commands).
func openSafeOs(l *lua.LState) int {
	l.Push(l.RegisterModule(lua.OsLibName, safeOsFuncs))
	return 1
}

var safeOsFuncs = map[string]lua.LGFunction{
	"time": func(l *lua.LState) int {
		l.Push(lua.LNumber(time.Now().Unix()))
		return 1
	},
	"date": func(l *lua.LState) int {
		l.Push(lua.LString(time.Now().UTC().Format(time.RFC3339)))
		return 1
	},
}

// toLua converts an unstructured value the way Argo CD does (util/lua decodeValue): numbers of
// any Go type become Lua numbers, json.Number becomes a string, maps and slices become tables,
// null becomes nil.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}
