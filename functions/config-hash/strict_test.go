package main

import (
	"fmt"
	"strings"
	"testing"
)

// lineOf returns the line (from 1) on which s has sub, which must start a line.
func lineOf(s, sub string) int {
	i := strings.Index(s, sub)
	if i < 0 || i > 0 && s[i-1] != '\n' {
		panic(fmt.Sprintf("%q does not start a line of the input", sub))
	}
	return strings.Count(s[:i], "\n") + 1
}

// The inputs config-hash used to get wrong, now refused by krmfn's strict reader:
// exit 1, the message on stderr, no resource written.
func TestStrictInput(t *testing.T) {
	a := adc("hub", "hello", "agents")
	// Two names: config-hash renamed the first and kyaml kept the second, so the object was applied
	// under a name no rewritten reference points at.
	twoNames := strings.Replace(a, "  name: hello\n", "  name: hello\n  name: other\n", 1)
	inList := asResourceList(docs(cma("hello", "addondeploymentconfigs hub/hello"), twoNames), "")
	twoConfigs := asResourceList(a, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {pruneProtection: \"false\"}") +
		"functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n"
	cases := []struct {
		name, input string
		want        string
		results     bool // a ResourceList answer holding the error
	}{
		{"metadata.name twice", docs(twoNames, cma("hello", "addondeploymentconfigs hub/hello")),
			"stdin, document 1 (AddOnDeploymentConfig hub/hello): key metadata.name is given twice, on lines 4 and 5", false},
		{"metadata.name twice in a ResourceList", inList, fmt.Sprintf("stdin, ResourceList items[1] (AddOnDeploymentConfig hub/hello): key metadata.name is given twice, on lines %d and %d",
			lineOf(inList, "    name: hello\n    name: other\n"), lineOf(inList, "    name: other\n")), true},
		// The first, empty, items list was kept and the configs silently dropped.
		{"items twice", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n" +
			strings.TrimPrefix(asResourceList(a, ""), "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"),
			"stdin, ResourceList: key items is given twice, on lines 3 and 4", false},
		{"functionConfig twice", twoConfigs, fmt.Sprintf("stdin, ResourceList: key functionConfig is given twice, on lines %d and %d",
			lineOf(twoConfigs, "functionConfig:\n"), lineOf(twoConfigs, "functionConfig: {")), false},
		// A YAML boolean was read as the string "true".
		{"hash-suffix: true unquoted", docs(adc("hub", "hello", "agents", "annotations: {addonops.io/hash-suffix: true}")),
			`metadata.annotations[addonops.io/hash-suffix] is the boolean true, but annotation values are strings (the API server rejects anything else): quote it: "true"`, false},
		// Its configs were neither hashed nor protected.
		{"a List from kubectl get -o yaml", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(a), "\n", "\n  ") + "\n",
			"stdin, document 1 is a List, a list of objects (what kubectl get -o yaml writes), whose items this function would not see", false},
		{"a List in a ResourceList", asResourceList(docs(a, "apiVersion: v1\nkind: List\nitems: []\n"), ""), "stdin, ResourceList items[1] is a List", true},
		{"items: null", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n", "the ResourceList on stdin has items: null: write items: [] for an empty one", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := execute(tc.input, nil)
			if code != 1 || !strings.HasPrefix(stderr, "config-hash: ") || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and only:\n%s", code, stderr, tc.want)
			}
			if tc.results {
				if !strings.Contains(out, "kind: ResourceList") || !strings.Contains(out, "items: []") || strings.Count(out, "severity: error") != 1 {
					t.Fatalf("want a ResourceList with the error as its only result:\n%s", out)
				}
			} else if out != "" {
				t.Fatalf("wrote to stdout:\n%s", out)
			}
		})
	}
}
